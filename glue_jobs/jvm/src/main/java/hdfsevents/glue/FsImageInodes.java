package hdfsevents.glue;

import java.util.HashMap;
import java.util.Iterator;
import java.util.Map;
import java.util.NoSuchElementException;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.RowFactory;

/**
 * The INODE records of one INODE part (a sub-section, or the whole section) as rows of
 * glue_jobs.inventory_image.INODE_DDL (Hadoop 3.3.4's field numbers: fsimage.proto's
 * INodeSection). Absent fields read as protobuf's defaults (0), as Hadoop reads them. In the
 * JVM because decoding 10M inodes in Python and pickling their rows to the JVM was most of the
 * job's CPU (docs/fsimage.md, "At scale"); the job's rows are held to `hdfs oiv -p Delimited`
 * (tests/integration/glue/test_namespace_inventory.py).
 */
final class FsImageInodes implements Iterator<Row> {
    static final int FILE = 1;
    static final int DIRECTORY = 2;
    static final int SYMLINK = 3;
    private static final String[] KINDS = {null, "FILE", "DIRECTORY", "SYMLINK"};

    // The permission fixed64 (INodeWithAdditionalFields.PermissionStatusFormat): user string id
    // in bits 40-63, group string id in bits 16-39, mode in bits 0-15.
    private static final long ID_MASK = (1L << 24) - 1;
    // SerialNumberManager's ordinals: with dfs.image.expanded.string.tables the table keys a
    // user's or group's id with the manager's ordinal in its top maskBits bits.
    private static final int USER_ORDINAL = 1;
    private static final int GROUP_ORDINAL = 2;

    /** STRING_TABLE: user and group names by serial number. */
    static final class StringTable {
        final int maskBits;
        final Map<Integer, String> strings = new HashMap<>();

        StringTable(byte[] data, String section, long base) {
            WireReader r = new WireReader(data);
            int mask = 0;
            try {
                boolean header = true;
                while (r.pos < data.length) {
                    int end = r.nextMessage(data.length);
                    int sid = 0;
                    String text = "";
                    while (r.nextField(end)) {
                        if (header && r.number == 2 && r.wire != WireReader.LENGTH) {
                            mask = (int) r.value;
                        } else if (!header && r.number == 1 && r.wire != WireReader.LENGTH) {
                            sid = (int) r.value;
                        } else if (!header && r.number == 2 && r.wire == WireReader.LENGTH) {
                            text = r.string();
                        }
                    }
                    if (!header) {
                        strings.put(sid, text);
                    }
                    header = false;
                }
            } catch (WireReader.Failure failure) {
                throw WireReader.section(section, base, failure);
            }
            this.maskBits = mask;
        }

        String get(long serial, int ordinal) {
            int key = (int) serial;
            if (maskBits != 0) {
                key |= ordinal << (32 - maskBits);
            }
            return strings.get(key);
        }
    }

    private final WireReader r;
    private final String section;
    private final long base;
    private final StringTable strings;
    // A namespace has few (owner, group, mode) triples: each is looked up once.
    private final Map<Long, Object[]> permissions = new HashMap<>();

    FsImageInodes(byte[] data, String section, long base, boolean header, StringTable strings) {
        this.r = new WireReader(data);
        this.section = section;
        this.base = base;
        this.strings = strings;
        if (header && data.length > 0) {
            read(() -> r.pos = r.nextMessage(data.length));
        }
    }

    @Override
    public boolean hasNext() {
        return r.pos < r.buf.length;
    }

    @Override
    public Row next() {
        if (!hasNext()) {
            throw new NoSuchElementException();
        }
        Row[] row = new Row[1];
        read(() -> row[0] = inode(r.nextMessage(r.buf.length)));
        return row[0];
    }

    private void read(Runnable step) {
        try {
            step.run();
        } catch (WireReader.Failure failure) {
            throw WireReader.section(section, base, failure);
        }
    }

    private Row inode(int end) {
        int start = r.pos;
        int kind = 0;
        long id = 0;
        String name = "";
        int bodyStart = -1;
        int bodyEnd = -1;
        while (r.nextField(end)) {
            if (r.number == 1 && r.wire != WireReader.LENGTH) {
                kind = (int) r.value;
            } else if (r.number == 2 && r.wire != WireReader.LENGTH) {
                id = r.value;
            } else if (r.number == 3 && r.wire == WireReader.LENGTH) {
                name = r.string();
            } else if (r.number >= 4 && r.number <= 6 && r.wire == WireReader.LENGTH) {
                bodyStart = (int) r.value;
                bodyEnd = r.after;
            }
        }
        if (kind < FILE || kind > SYMLINK) {
            throw new WireReader.Failure(start, "inode " + id + ": unknown type " + kind);
        }
        if (bodyStart < 0) {
            throw new WireReader.Failure(start, "inode " + id + ": " + KINDS[kind]
                    + " without its " + KINDS[kind].toLowerCase() + " message");
        }
        WireReader body = new WireReader(r.buf);
        body.pos = bodyStart;
        if (kind == FILE) {
            return file(body, bodyEnd, id, name);
        }
        return kind == DIRECTORY ? directory(body, bodyEnd, id, name)
                : symlink(body, bodyEnd, id, name);
    }

    private Object[] permission(long packed) {
        return permissions.computeIfAbsent(packed, p -> new Object[] {
            strings.get((p >>> 40) & ID_MASK, USER_ORDINAL),
            strings.get((p >>> 16) & ID_MASK, GROUP_ORDINAL), (int) (p & 0xFFFF)});
    }

    private Row file(WireReader f, int end, long id, String name) {
        long replication = 0;
        long mtime = 0;
        long atime = 0;
        long blockSize = 0;
        long permission = 0;
        long policy = 0;
        Integer ecPolicy = null;
        long blocks = 0;
        long size = 0;
        boolean underConstruction = false;
        while (f.nextField(end)) {
            if (f.wire == WireReader.VARINT) {
                switch (f.number) {
                    case 1: replication = f.value; break;
                    case 2: mtime = f.value; break;
                    case 3: atime = f.value; break;
                    case 4: blockSize = f.value; break;
                    case 10: policy = f.value; break;
                    case 12: ecPolicy = (int) f.value; break;
                    default: break;
                }
            } else if (f.wire == WireReader.LENGTH && f.number == 6) {
                blocks++;
                size += blockBytes(f.buf, (int) f.value, f.after);
            } else if (f.wire == WireReader.LENGTH && f.number == 7) {
                underConstruction = true;
            } else if (f.wire == WireReader.FIXED64 && f.number == 5) {
                permission = f.value;
            }
        }
        Object[] p = permission(permission);
        return RowFactory.create(id, "FILE", name, mtime, atime, p[0], p[1], p[2],
                (int) replication, blockSize, (int) blocks, size, (int) policy, ecPolicy,
                underConstruction, 0L, 0L, null);
    }

    /** numBytes (field 3) of a BlockProto. */
    private static long blockBytes(byte[] buf, int start, int end) {
        WireReader b = new WireReader(buf);
        b.pos = start;
        long size = 0;
        while (b.nextField(end)) {
            if (b.number == 3 && b.wire != WireReader.LENGTH) {
                size = b.value;
            }
        }
        return size;
    }

    private Row directory(WireReader d, int end, long id, String name) {
        long mtime = 0;
        long nsQuota = 0;
        long dsQuota = 0;
        long permission = 0;
        while (d.nextField(end)) {
            if (d.number == 1 && d.wire != WireReader.LENGTH) {
                mtime = d.value;
            } else if (d.number == 2 && d.wire != WireReader.LENGTH) {
                nsQuota = d.value; // uint64 read as Java's long: -1 for none, as Hadoop reads it
            } else if (d.number == 3 && d.wire != WireReader.LENGTH) {
                dsQuota = d.value;
            } else if (d.number == 4 && d.wire == WireReader.FIXED64) {
                permission = d.value;
            }
        }
        Object[] p = permission(permission);
        return RowFactory.create(id, "DIRECTORY", name, mtime, 0L, p[0], p[1], p[2], 0, 0L, 0,
                0L, 0, null, false, nsQuota, dsQuota, null);
    }

    private Row symlink(WireReader s, int end, long id, String name) {
        long mtime = 0;
        long atime = 0;
        long permission = 0;
        String target = "";
        while (s.nextField(end)) {
            if (s.number == 1 && s.wire == WireReader.FIXED64) {
                permission = s.value;
            } else if (s.number == 2 && s.wire == WireReader.LENGTH) {
                target = s.string();
            } else if (s.number == 3 && s.wire != WireReader.LENGTH) {
                mtime = s.value;
            } else if (s.number == 4 && s.wire != WireReader.LENGTH) {
                atime = s.value;
            }
        }
        Object[] p = permission(permission);
        return RowFactory.create(id, "SYMLINK", name, mtime, atime, p[0], p[1], p[2], 0, 0L, 0,
                0L, 0, null, false, 0L, 0L, target);
    }
}
