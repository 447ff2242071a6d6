package hdfsevents.glue;

import java.io.Serializable;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;

import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.catalyst.expressions.GenericInternalRow;
import org.apache.spark.sql.catalyst.util.GenericArrayData;
import org.apache.spark.sql.types.ArrayType;
import org.apache.spark.sql.types.BooleanType;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.LongType;
import org.apache.spark.sql.types.StringType;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.unsafe.types.UTF8String;

/**
 * Parses a raw lake line that is in the contract's canonical form, and proves that it is, in one
 * pass over its UTF-8 bytes.
 *
 * <p>The canonical form is what hdfs_events.event.HdfsEvent.to_json writes: Python's
 * json.dumps(ensure_ascii=False, separators=(",", ":")) of every field in the schema's order.
 * A line is canonical when it is exactly that writer's output for the values read from it:
 * every key once, in order, nothing between tokens; integers as Python writes them (no sign on
 * zero, no leading zero, no fraction or exponent) and within a Java long; strings in valid
 * UTF-8 with only the escapes Python writes (\" \\ \b \f \n \r \t, and backslash-u00XX in lower
 * case for the other control characters below 0x20); nothing after the closing brace. Any other
 * line is not proved here: the caller parses and judges it the slow way (the Python contract),
 * so this may refuse more than it must but never accepts a line that writer would not produce.
 *
 * <p>Result: [the event (the schema's fields, then `trailingNulls` nulls), null] for a
 * canonical line; [null, where and why it is not] otherwise.
 */
final class CanonicalLine implements Serializable {
    private static final long serialVersionUID = 1L;

    private final Record record;
    private final int trailingNulls;

    CanonicalLine(StructType schema, int trailingNulls) {
        this.record = new Record(schema);
        this.trailingNulls = trailingNulls;
    }

    InternalRow parse(UTF8String line) {
        // A copy: strings of the result point into it, and the reader reuses its line buffer.
        byte[] b = line.getBytes();
        if (b == line.getBaseObject()) {
            b = b.clone();
        }
        try {
            Object[] values = new Object[record.kinds.length + trailingNulls];
            int end = record.read(b, 0, values);
            if (end != b.length) {
                throw new NotCanonical(end, "text after the closing brace");
            }
            return new GenericInternalRow(new Object[] {new GenericInternalRow(values), null});
        } catch (NotCanonical e) {
            return new GenericInternalRow(new Object[] {
                null, UTF8String.fromString("byte " + e.at + ": " + e.getMessage())});
        }
    }

    private static final int STRING = 0;
    private static final int LONG = 1;
    private static final int BOOLEAN = 2;
    private static final int STRING_ARRAY = 3;
    private static final int RECORD_ARRAY = 4;

    /** One JSON object of a struct type: its keys as the bytes expected before each value. */
    private static final class Record implements Serializable {
        private static final long serialVersionUID = 1L;
        final byte[][] keys; // {"name": for the first field, ,"name": for the others
        final String[] names;
        final String[] expected; // what a line lacks where a key's bytes are not found
        final int[] kinds;
        final Record[] elements; // for RECORD_ARRAY fields

        Record(StructType schema) {
            StructField[] fields = schema.fields();
            keys = new byte[fields.length][];
            names = new String[fields.length];
            expected = new String[fields.length];
            kinds = new int[fields.length];
            elements = new Record[fields.length];
            for (int i = 0; i < fields.length; i++) {
                names[i] = fields[i].name();
                expected[i] = "key \"" + names[i] + "\"";
                keys[i] = ((i == 0 ? "{\"" : ",\"") + names[i] + "\":")
                    .getBytes(StandardCharsets.UTF_8);
                DataType type = fields[i].dataType();
                if (type instanceof StringType) {
                    kinds[i] = STRING;
                } else if (type instanceof LongType) {
                    kinds[i] = LONG;
                } else if (type instanceof BooleanType) {
                    kinds[i] = BOOLEAN;
                } else if (type instanceof ArrayType
                        && ((ArrayType) type).elementType() instanceof StringType) {
                    kinds[i] = STRING_ARRAY;
                } else if (type instanceof ArrayType
                        && ((ArrayType) type).elementType() instanceof StructType) {
                    kinds[i] = RECORD_ARRAY;
                    elements[i] = new Record((StructType) ((ArrayType) type).elementType());
                } else {
                    throw new IllegalArgumentException("field '" + names[i] + "': no canonical "
                        + "form for type " + type.simpleString() + " (string, bigint, boolean, "
                        + "array<string> or array<struct> only)");
                }
            }
            if (fields.length == 0) {
                throw new IllegalArgumentException("schema has no fields");
            }
        }

        /** Reads the object at `at` into values[0..fields); returns where it ends. */
        int read(byte[] b, int at, Object[] values) throws NotCanonical {
            for (int i = 0; i < kinds.length; i++) {
                at = expect(b, at, keys[i], expected[i]);
                if (startsWith(b, at, NULL)) {
                    values[i] = null;
                    at += NULL.length;
                    continue;
                }
                switch (kinds[i]) {
                    case STRING -> at = string(b, at, values, i);
                    case LONG -> at = number(b, at, values, i);
                    case BOOLEAN -> at = bool(b, at, values, i);
                    case STRING_ARRAY -> at = strings(b, at, values, i);
                    default -> at = records(b, at, values, i, elements[i]);
                }
            }
            return expect(b, at, CLOSE, "the closing brace");
        }
    }

    private static final byte[] NULL = {'n', 'u', 'l', 'l'};
    private static final byte[] TRUE = {'t', 'r', 'u', 'e'};
    private static final byte[] FALSE = {'f', 'a', 'l', 's', 'e'};
    private static final byte[] CLOSE = {'}'};

    private static boolean startsWith(byte[] b, int at, byte[] token) {
        return b.length - at >= token.length
            && Arrays.equals(b, at, at + token.length, token, 0, token.length);
    }

    private static int expect(byte[] b, int at, byte[] token, String what) throws NotCanonical {
        if (!startsWith(b, at, token)) {
            throw new NotCanonical(at, "expected " + what + " here (keys in the contract's "
                + "order, nothing between tokens)");
        }
        return at + token.length;
    }

    private static int bool(byte[] b, int at, Object[] values, int i) throws NotCanonical {
        if (startsWith(b, at, TRUE)) {
            values[i] = Boolean.TRUE;
            return at + TRUE.length;
        }
        if (startsWith(b, at, FALSE)) {
            values[i] = Boolean.FALSE;
            return at + FALSE.length;
        }
        throw new NotCanonical(at, "expected true, false or null");
    }

    /** An integer as Python writes one, within a Java long. */
    private static int number(byte[] b, int at, Object[] values, int i) throws NotCanonical {
        int start = at;
        boolean negative = at < b.length && b[at] == '-';
        if (negative) {
            at++;
        }
        int digits = at;
        while (at < b.length && b[at] >= '0' && b[at] <= '9') {
            at++;
        }
        int n = at - digits;
        if (n == 0) {
            throw new NotCanonical(start, "expected an integer or null");
        }
        if (b[digits] == '0' && (n > 1 || negative)) {
            throw new NotCanonical(start, "an integer Python would write differently");
        }
        if (n > 19) {
            throw new NotCanonical(start, "an integer past a Java long");
        }
        // Summed negative: a long's range reaches one further below zero than above.
        long value = 0;
        for (int k = digits; k < at; k++) {
            long next = value * 10 - (b[k] - '0');
            if (value < Long.MIN_VALUE / 10 || next > value) {
                throw new NotCanonical(start, "an integer past a Java long");
            }
            value = next;
        }
        if (!negative && value == Long.MIN_VALUE) {
            throw new NotCanonical(start, "an integer past a Java long");
        }
        values[i] = negative ? value : -value;
        return at;
    }

    private static int string(byte[] b, int at, Object[] values, int i) throws NotCanonical {
        if (at >= b.length || b[at] != '"') {
            throw new NotCanonical(at, "expected a string or null");
        }
        int start = at + 1;
        int end = start;
        boolean escaped = false;
        while (true) {
            if (end >= b.length) {
                throw new NotCanonical(end, "a string without its closing quote");
            }
            int c = b[end] & 0xff;
            if (c == '"') {
                break;
            }
            if (c == '\\') {
                escaped = true;
                end = escape(b, end);
            } else if (c < 0x20) {
                throw new NotCanonical(end, "a control character Python would escape");
            } else if (c < 0x80) {
                end++;
            } else {
                end = utf8(b, end);
            }
        }
        values[i] = escaped ? unescape(b, start, end) : UTF8String.fromBytes(b, start, end - start);
        return end + 1;
    }

    /** The end of the escape at `at` if it is one Python writes. */
    private static int escape(byte[] b, int at) throws NotCanonical {
        if (at + 1 >= b.length) {
            throw new NotCanonical(at, "a string without its closing quote");
        }
        switch (b[at + 1]) {
            case '"', '\\', 'b', 'f', 'n', 'r', 't':
                return at + 2;
            case 'u':
                int code = at + 6 <= b.length && b[at + 2] == '0' && b[at + 3] == '0'
                    ? (hex(b[at + 4]) << 4) | hex(b[at + 5]) : -1;
                if (code < 0 || code >= 0x20 || code == '\b' || code == '\f' || code == '\n'
                        || code == '\r' || code == '\t') {
                    throw new NotCanonical(at, "a \\u escape Python would not write");
                }
                return at + 6;
            default:
                throw new NotCanonical(at, "an escape Python would not write");
        }
    }

    private static int hex(byte h) {
        if (h >= '0' && h <= '9') {
            return h - '0';
        }
        return h >= 'a' && h <= 'f' ? h - 'a' + 10 : -1;  // upper case is not Python's
    }

    /** The end of the well-formed UTF-8 sequence at `at` (RFC 3629: no overlong form, no
     * surrogate, nothing past U+10FFFF). */
    private static int utf8(byte[] b, int at) throws NotCanonical {
        int c = b[at] & 0xff;
        int length;
        int low = 0x80;
        int high = 0xbf;
        if (c >= 0xc2 && c <= 0xdf) {
            length = 2;
        } else if (c >= 0xe0 && c <= 0xef) {
            length = 3;
            if (c == 0xe0) {
                low = 0xa0;
            } else if (c == 0xed) {
                high = 0x9f;
            }
        } else if (c >= 0xf0 && c <= 0xf4) {
            length = 4;
            if (c == 0xf0) {
                low = 0x90;
            } else if (c == 0xf4) {
                high = 0x8f;
            }
        } else {
            throw new NotCanonical(at, "not UTF-8");
        }
        if (at + length > b.length) {
            throw new NotCanonical(at, "not UTF-8");
        }
        int second = b[at + 1] & 0xff;
        if (second < low || second > high) {
            throw new NotCanonical(at, "not UTF-8");
        }
        for (int k = 2; k < length; k++) {
            int next = b[at + k] & 0xff;
            if (next < 0x80 || next > 0xbf) {
                throw new NotCanonical(at, "not UTF-8");
            }
        }
        return at + length;
    }

    /** The bytes between start and end (escapes checked by escape) with the escapes read. */
    private static UTF8String unescape(byte[] b, int start, int end) {
        byte[] out = new byte[end - start];
        int n = 0;
        for (int k = start; k < end; k++) {
            if (b[k] != '\\') {
                out[n++] = b[k];
                continue;
            }
            byte e = b[++k];
            switch (e) {
                case 'b' -> out[n++] = '\b';
                case 'f' -> out[n++] = '\f';
                case 'n' -> out[n++] = '\n';
                case 'r' -> out[n++] = '\r';
                case 't' -> out[n++] = '\t';
                case 'u' -> {
                    out[n++] = (byte) ((hex(b[k + 3]) << 4) | hex(b[k + 4]));
                    k += 4;
                }
                default -> out[n++] = e;  // " or \
            }
        }
        return UTF8String.fromBytes(out, 0, n);
    }

    private static int strings(byte[] b, int at, Object[] values, int i) throws NotCanonical {
        at = expect(b, at, OPEN_ARRAY, "an array or null");
        Object[] items = new Object[4];
        int n = 0;
        if (at < b.length && b[at] == ']') {
            values[i] = new GenericArrayData(new Object[0]);
            return at + 1;
        }
        while (true) {
            if (n == items.length) {
                items = Arrays.copyOf(items, 2 * n);
            }
            at = string(b, at, items, n++);
            if (at < b.length && b[at] == ',') {
                at++;
            } else {
                break;
            }
        }
        values[i] = new GenericArrayData(Arrays.copyOf(items, n));
        return expect(b, at, CLOSE_ARRAY, "the array's closing bracket");
    }

    private static int records(byte[] b, int at, Object[] values, int i, Record element)
            throws NotCanonical {
        at = expect(b, at, OPEN_ARRAY, "an array or null");
        Object[] items = new Object[4];
        int n = 0;
        if (at < b.length && b[at] == ']') {
            values[i] = new GenericArrayData(new Object[0]);
            return at + 1;
        }
        while (true) {
            if (n == items.length) {
                items = Arrays.copyOf(items, 2 * n);
            }
            Object[] fields = new Object[element.kinds.length];
            at = element.read(b, at, fields);
            items[n++] = new GenericInternalRow(fields);
            if (at < b.length && b[at] == ',') {
                at++;
            } else {
                break;
            }
        }
        values[i] = new GenericArrayData(Arrays.copyOf(items, n));
        return expect(b, at, CLOSE_ARRAY, "the array's closing bracket");
    }

    private static final byte[] OPEN_ARRAY = {'['};
    private static final byte[] CLOSE_ARRAY = {']'};

    /** Where and why a line is not canonical; no stack trace (a rejected line is a value). */
    static final class NotCanonical extends Exception {
        private static final long serialVersionUID = 1L;
        final int at;

        NotCanonical(int at, String why) {
            super(why, null, false, false);
            this.at = at;
        }
    }
}
