package hdfsevents.glue;

/**
 * An fsimage the decoder cannot read, naming the section and the image byte it stopped at
 * ("INODE_SUB at byte 93: message of 200 bytes runs 161 bytes past the end"). The job's
 * driver finds it in Spark's task failure by this class's simple name, as it finds the Python
 * reader's glue_jobs.fsimage_format.ImageFormatError.
 */
public final class ImageFormatError extends RuntimeException {
    private static final long serialVersionUID = 1L;

    public ImageFormatError(String message) {
        super(message);
    }
}
