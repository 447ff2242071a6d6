package hdfsevents.glue;

import java.nio.charset.StandardCharsets;

/**
 * Protocol Buffers' wire format over one part of an fsimage, read by the rules and in the
 * error words of the driver's reader, glue_jobs/fsimage_wire.py: unknown fields skipped by wire
 * type, groups refused, a length running past its message refused. Errors are
 * {@link Failure}s at a position in the part; {@link #section} turns them into an
 * {@link ImageFormatError} naming the section and the image byte.
 *
 * <p>Use: {@code while (r.nextField(end))} then {@code r.number}, {@code r.wire},
 * {@code r.value} (the number, or a LENGTH field's first byte) and {@code r.after}.
 */
final class WireReader {
    static final int VARINT = 0;
    static final int FIXED64 = 1;
    static final int LENGTH = 2;
    static final int FIXED32 = 5;

    static final class Failure extends RuntimeException {
        private static final long serialVersionUID = 1L;
        final long position;
        final String rule;

        Failure(long position, String rule) {
            super(rule, null, false, false);
            this.position = position;
            this.rule = rule;
        }
    }

    final byte[] buf;
    int pos;
    int number;
    int wire;
    long value;
    int after;

    WireReader(byte[] buf) {
        this.buf = buf;
    }

    static ImageFormatError section(String name, long base, Failure failure) {
        return new ImageFormatError(name + " at byte " + (base + failure.position) + ": "
                + failure.rule);
    }

    long varint() {
        int start = pos;
        long result = 0;
        int shift = 0;
        while (true) {
            if (pos >= buf.length) {
                throw new Failure(start, "truncated varint");
            }
            byte b = buf[pos++];
            result |= (long) (b & 0x7F) << shift;
            if (b >= 0) {
                return result;
            }
            shift += 7;
            if (shift >= 70) {
                throw new Failure(start, "varint longer than 10 bytes");
            }
        }
    }

    /** The next length-delimited message in [pos, stop): its body is [pos, returned end). */
    int nextMessage(int stop) {
        long size = varint();
        // compared unsigned: a corrupt length may be any uint64, as Python reads it
        if (Long.compareUnsigned(size, stop - pos) > 0) {
            throw new Failure(pos, "message of " + Long.toUnsignedString(size) + " bytes runs "
                    + Long.toUnsignedString(size - (stop - pos)) + " bytes past the end");
        }
        return pos + (int) size;
    }

    /** Reads the next field of the message ending at `end`; false at its end. */
    boolean nextField(int end) {
        if (pos >= end) {
            if (pos != end) {
                throw new Failure(end, "message ends inside a field");
            }
            return false;
        }
        long key = varint();
        number = (int) (key >>> 3);
        wire = (int) (key & 7);
        if (number == 0) {
            throw new Failure(pos, "field number 0");
        }
        switch (wire) {
            case VARINT:
                value = varint();
                after = pos;
                break;
            case LENGTH: {
                long size = varint();
                if (pos > end || Long.compareUnsigned(size, end - pos) > 0) {
                    throw new Failure(pos, "field " + number + " runs "
                            + Long.toUnsignedString(size - (end - pos))
                            + " bytes past its message");
                }
                value = pos;
                after = pos + (int) size;
                pos = after;
                break;
            }
            case FIXED64:
                if (pos + 8 > end) {
                    throw new Failure(pos, "field " + number + ": truncated fixed64");
                }
                value = littleEndian(pos, 8);
                pos += 8;
                after = pos;
                break;
            case FIXED32:
                if (pos + 4 > end) {
                    throw new Failure(pos, "field " + number + ": truncated fixed32");
                }
                value = littleEndian(pos, 4);
                pos += 4;
                after = pos;
                break;
            default: // 3 and 4 are proto2 groups, which no fsimage message uses
                throw new Failure(pos, "field " + number + ": unsupported wire type " + wire);
        }
        if (pos > end) {
            throw new Failure(end, "message ends inside a field");
        }
        return true;
    }

    String string() {
        return new String(buf, (int) value, after - (int) value, StandardCharsets.UTF_8);
    }

    private long littleEndian(int at, int bytes) {
        long out = 0;
        for (int i = bytes - 1; i >= 0; i--) {
            out = (out << 8) | (buf[at + i] & 0xFF);
        }
        return out;
    }
}
