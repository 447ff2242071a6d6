package hdfsevents.glue;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import org.apache.spark.api.java.JavaRDD;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.RowFactory;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.util.LongAccumulator;

/**
 * The namespace inventory job's decode, called from Python (glue_jobs/inventory_run.py): each
 * part of the image (a row `section string, base bigint, header boolean, data binary`: one
 * sub-section's bytes, decompressed, fetched by a Python task with the object's ETag) is
 * decoded in the JVM task that holds it, so no inode crosses to Python and back.
 */
public final class FsImageParts {
    private FsImageParts() {
    }

    /** Every inode of the parts, as rows of `ddl` (glue_jobs.inventory_image.INODE_DDL). */
    public static Dataset<Row> inodes(Dataset<Row> parts, byte[] stringTable, long stringBase,
                                      String ddl) {
        JavaRDD<Row> rows = parts.javaRDD().flatMap(part -> decoder(part,
                new FsImageInodes.StringTable(stringTable, "STRING_TABLE", stringBase)));
        return parts.sparkSession().createDataFrame(rows, StructType.fromDDL(ddl));
    }

    /**
     * (id, name) of every directory of the parts; `inodes` and `directories` count what the
     * decode read (the job's report), once per task run.
     */
    public static Dataset<Row> directories(Dataset<Row> parts, LongAccumulator inodes,
                                           LongAccumulator directories) {
        byte[] noStrings = new byte[0];
        JavaRDD<Row> rows = parts.javaRDD().mapPartitions(part -> {
            List<Row> out = new ArrayList<>();
            long read = 0;
            while (part.hasNext()) {
                Iterator<Row> decoded = decoder(part.next(),
                        new FsImageInodes.StringTable(noStrings, "STRING_TABLE", 0));
                while (decoded.hasNext()) {
                    Row inode = decoded.next();
                    read++;
                    if ("DIRECTORY".equals(inode.getString(1))) {
                        out.add(RowFactory.create(inode.getLong(0), inode.getString(2)));
                    }
                }
            }
            inodes.add(read);
            directories.add(out.size());
            return out.iterator();
        });
        return parts.sparkSession().createDataFrame(rows, new StructType()
                .add("id", DataTypes.LongType, false).add("name", DataTypes.StringType, false));
    }

    private static Iterator<Row> decoder(Row part, FsImageInodes.StringTable strings) {
        return new FsImageInodes((byte[]) part.get(3), part.getString(0), part.getLong(1),
                part.getBoolean(2), strings);
    }

    /**
     * (child, parent) of every child the INODE_DIR parts list; a reference child (a position
     * in INODE_REFERENCE) is the inode it refers to: `referred`, the section's referred ids in
     * order as little-endian longs.
     */
    public static Dataset<Row> links(Dataset<Row> parts, byte[] referred) {
        JavaRDD<Row> rows = parts.javaRDD().flatMap(part -> {
            long[] refs = new long[referred.length / 8];
            ByteBuffer.wrap(referred).order(ByteOrder.LITTLE_ENDIAN).asLongBuffer().get(refs);
            return directoryEntries((byte[]) part.get(3), part.getString(0), part.getLong(1),
                    refs).iterator();
        });
        return parts.sparkSession().createDataFrame(rows, new StructType()
                .add("child", DataTypes.LongType, false)
                .add("parent", DataTypes.LongType, false));
    }

    /**
     * The INODE_DIR part's DirEntry records (parent 1, children 2 and reference children 3,
     * each packed or not), flattened to (child, parent) rows.
     */
    static List<Row> directoryEntries(byte[] data, String section, long base, long[] refs) {
        List<Row> out = new ArrayList<>();
        WireReader r = new WireReader(data);
        try {
            while (r.pos < data.length) {
                int end = r.nextMessage(data.length);
                long parent = 0;
                List<Long> children = new ArrayList<>();
                List<Long> positions = new ArrayList<>();
                while (r.nextField(end)) {
                    if (r.number == 1 && r.wire != WireReader.LENGTH) {
                        parent = r.value;
                    } else if (r.number == 2) {
                        repeated(r, children);
                    } else if (r.number == 3) {
                        repeated(r, positions);
                    }
                }
                for (long child : children) {
                    out.add(RowFactory.create(child, parent));
                }
                for (long position : positions) {
                    if (position < 0 || position >= refs.length) {
                        throw new ImageFormatError("INODE_DIR: directory " + parent
                                + " lists reference " + position
                                + ", the INODE_REFERENCE section holds " + refs.length);
                    }
                    out.add(RowFactory.create(refs[(int) position], parent));
                }
            }
        } catch (WireReader.Failure failure) {
            throw WireReader.section(section, base, failure);
        }
        return out;
    }

    /** A repeated uint field's values from one occurrence, packed (LENGTH) or not. */
    private static void repeated(WireReader r, List<Long> into) {
        if (r.wire == WireReader.VARINT) {
            into.add(r.value);
            return;
        }
        if (r.wire != WireReader.LENGTH) {
            throw new WireReader.Failure(r.after, "repeated varint field has wire type "
                    + r.wire);
        }
        WireReader packed = new WireReader(r.buf);
        packed.pos = (int) r.value;
        while (packed.pos < r.after) {
            into.add(packed.varint());
        }
        if (packed.pos != r.after) {
            throw new WireReader.Failure(r.after, "packed varints overrun their field");
        }
    }
}
