package hdfsevents.kit;

import java.net.URI;
import java.util.List;
import java.util.concurrent.TimeUnit;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.permission.AclEntry;
import org.apache.hadoop.fs.permission.FsPermission;
import org.apache.hadoop.fs.XAttr;
import org.apache.hadoop.hdfs.DFSInotifyEventInputStream;
import org.apache.hadoop.hdfs.client.HdfsAdmin;
import org.apache.hadoop.hdfs.inotify.Event;
import org.apache.hadoop.hdfs.inotify.EventBatch;

/**
 * Hadoop's own DFSInotifyEventInputStream read in plain Java, independently of the agent.
 *
 * <p>{@code events URI AFTER END}: prints every event with AFTER < txid <= END as one JSON line in
 * the contract's field names, each value taken from the event's own getters (the agent decodes
 * protobuf bytes instead; the two must agree). The conversion rules are written here again on
 * purpose: one shared implementation could not catch its own mistakes.
 *
 * <p>{@code count URI AFTER END}: the baseline loop of the live bench: poll, count, discard, until
 * txid END is read; prints {"events": n, "batches": b, "seconds": s}.
 *
 * <p>The cluster's configuration comes from the classpath (its conf dir goes first), as for any
 * Hadoop client.
 */
public final class InotifyReader {
  private InotifyReader() {}

  public static void main(String[] args) throws Exception {
    if (args.length != 4) {
      System.err.println("usage: InotifyReader events|count HDFS_URI AFTER_TXID END_TXID");
      System.exit(2);
    }
    String mode = args[0];
    URI uri = URI.create(args[1]);
    long after = Long.parseLong(args[2]);
    long end = Long.parseLong(args[3]);
    HdfsAdmin admin = new HdfsAdmin(uri, new Configuration());
    DFSInotifyEventInputStream stream = admin.getInotifyEventStream(after);
    long start = System.nanoTime();
    long events = 0;
    long batches = 0;
    StringBuilder out = new StringBuilder();
    long last = after;
    while (last < end) {
      EventBatch batch = stream.poll(1, TimeUnit.SECONDS);
      if (batch == null) {
        continue;
      }
      last = batch.getTxid();
      if (last > end) {
        break;
      }
      batches++;
      Event[] batchEvents = batch.getEvents();
      events += batchEvents.length;
      if (mode.equals("events")) {
        for (int i = 0; i < batchEvents.length; i++) {
          out.setLength(0);
          json(out, last, i, batchEvents[i]);
          System.out.println(out);
        }
      }
    }
    double seconds = (System.nanoTime() - start) / 1e9;
    if (mode.equals("count")) {
      System.out.println("{\"events\": " + events + ", \"batches\": " + batches
          + ", \"seconds\": " + seconds + "}");
    }
    System.out.flush();
  }

  private static void json(StringBuilder b, long txid, int index, Event e) {
    b.append("{\"txid\":").append(txid).append(",\"index\":").append(index);
    switch (e.getEventType()) {
      case CREATE: {
        Event.CreateEvent c = (Event.CreateEvent) e;
        boolean file = c.getiNodeType() == Event.CreateEvent.INodeType.FILE;
        field(b, "type", "CREATE");
        field(b, "path", c.getPath());
        num(b, "timestamp", c.getCtime());
        field(b, "inode_type", c.getiNodeType().name());
        num(b, "ctime", c.getCtime());
        num(b, "replication", file ? (Long) (long) c.getReplication() : null);
        field(b, "owner", c.getOwnerName());
        field(b, "group", c.getGroupName());
        field(b, "perms", octal(c.getPerms()));
        field(b, "symlink_target", c.getSymlinkTarget());
        bool(b, "overwrite", file ? c.getOverwrite() : null);
        num(b, "block_size", file ? (Long) c.getDefaultBlockSize() : null);
        bool(b, "erasure_coded", file ? c.isErasureCoded().orElse(null) : null);
        break;
      }
      case CLOSE: {
        Event.CloseEvent c = (Event.CloseEvent) e;
        field(b, "type", "CLOSE");
        field(b, "path", c.getPath());
        num(b, "timestamp", c.getTimestamp());
        num(b, "size", c.getFileSize());
        break;
      }
      case APPEND: {
        Event.AppendEvent a = (Event.AppendEvent) e;
        field(b, "type", "APPEND");
        field(b, "path", a.getPath());
        bool(b, "new_block", a.toNewBlock());
        break;
      }
      case RENAME: {
        Event.RenameEvent r = (Event.RenameEvent) e;
        field(b, "type", "RENAME");
        field(b, "path", r.getSrcPath());
        field(b, "dst_path", r.getDstPath());
        num(b, "timestamp", r.getTimestamp());
        break;
      }
      case UNLINK: {
        Event.UnlinkEvent u = (Event.UnlinkEvent) e;
        field(b, "type", "UNLINK");
        field(b, "path", u.getPath());
        num(b, "timestamp", u.getTimestamp());
        break;
      }
      case TRUNCATE: {
        Event.TruncateEvent t = (Event.TruncateEvent) e;
        field(b, "type", "TRUNCATE");
        field(b, "path", t.getPath());
        num(b, "timestamp", t.getTimestamp());
        num(b, "size", t.getFileSize());
        break;
      }
      case METADATA: {
        Event.MetadataUpdateEvent m = (Event.MetadataUpdateEvent) e;
        field(b, "type", "METADATA");
        field(b, "path", m.getPath());
        field(b, "metadata_type", m.getMetadataType().name());
        switch (m.getMetadataType()) {
          case TIMES:
            num(b, "mtime", m.getMtime());
            num(b, "atime", m.getAtime());
            break;
          case REPLICATION:
            num(b, "replication", (long) m.getReplication());
            break;
          case OWNER:
            // chown may set only one of the two; Hadoop sends "" for the other.
            field(b, "owner", emptyToNull(m.getOwnerName()));
            field(b, "group", emptyToNull(m.getGroupName()));
            break;
          case PERMS:
            field(b, "perms", octal(m.getPerms()));
            break;
          case ACLS:
            acls(b, m.getAcls());
            break;
          case XATTRS:
            xattrs(b, m.getxAttrs());
            bool(b, "xattrs_removed", m.isxAttrsRemoved());
            break;
          default:
            throw new IllegalStateException("metadata type " + m.getMetadataType());
        }
        break;
      }
      default:
        throw new IllegalStateException("event type " + e.getEventType());
    }
    b.append('}');
  }

  private static String octal(FsPermission p) {
    return p == null ? null : String.format("%04o", p.toShort() & 01777);
  }

  private static String emptyToNull(String s) {
    return s == null || s.isEmpty() ? null : s;
  }

  private static void acls(StringBuilder b, List<AclEntry> acls) {
    b.append(",\"acls\":[");
    if (acls != null) {
      for (int i = 0; i < acls.size(); i++) {
        if (i > 0) {
          b.append(',');
        }
        str(b, acls.get(i).toStringStable());
      }
    }
    b.append(']');
  }

  private static void xattrs(StringBuilder b, List<XAttr> xattrs) {
    b.append(",\"xattrs\":[");
    for (int i = 0; i < xattrs.size(); i++) {
      XAttr x = xattrs.get(i);
      if (i > 0) {
        b.append(',');
      }
      b.append("{\"namespace\":");
      str(b, x.getNameSpace().name());
      b.append(",\"name\":");
      str(b, x.getName());
      b.append(",\"value\":");
      if (x.getValue() == null) {
        b.append("null");
      } else {
        StringBuilder hex = new StringBuilder("0x");
        for (byte v : x.getValue()) {
          hex.append(String.format("%02x", v & 0xff));
        }
        str(b, hex.toString());
      }
      b.append('}');
    }
    b.append(']');
  }

  private static void field(StringBuilder b, String name, String value) {
    b.append(",\"").append(name).append("\":");
    if (value == null) {
      b.append("null");
    } else {
      str(b, value);
    }
  }

  private static void num(StringBuilder b, String name, Long value) {
    b.append(",\"").append(name).append("\":").append(value == null ? "null" : value.toString());
  }

  private static void bool(StringBuilder b, String name, Boolean value) {
    b.append(",\"").append(name).append("\":").append(value == null ? "null" : value.toString());
  }

  private static void str(StringBuilder b, String s) {
    b.append('"');
    for (int i = 0; i < s.length(); i++) {
      char c = s.charAt(i);
      if (c == '"' || c == '\\') {
        b.append('\\').append(c);
      } else if (c < 0x20) {
        b.append(String.format("\\u%04x", (int) c));
      } else {
        b.append(c);
      }
    }
    b.append('"');
  }
}
