"""A real HDFS on this machine, from Hadoop's own jars (see pom.xml and README: `make hadoop`).

`HdfsCluster` (cluster.py) starts a NameNode and a DataNode (MiniDFSCluster), or an HA pair
behind a nameservice, or a Kerberos-secured pair with its own KDC (realm.py: MiniKdc), in a
JVM process of its own (host.py), writes the
client configuration a Hadoop client needs into a conf dir, and drives client workloads
through the FileSystem API (ops.py), as Hadoop's own tests do. `KeyServer` (kms.py) runs Hadoop's
KMS beside it, for encryption zones.
"""
