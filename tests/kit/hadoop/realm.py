"""A Kerberos realm for the secure cluster (JVM side, inside host.py's process): Hadoop's MiniKdc,
realm EXAMPLE.COM, on 127.0.0.1, with one keytab per role.

    hdfs.keytab         hdfs/localhost + HTTP/localhost: the NameNode, the DataNode, SPNEGO
    hdfs-events.keytab  hdfs-events/localhost: the agent, an HDFS superuser (static group mapping)
    alice.keytab        alice/localhost: an ordinary user, no superuser
    bob.keytab          bob/localhost: the same, for a test that rotates its key

The model is Hadoop's own TestDFSInotifyEventInputStreamKerberized and SaslDataTransferTestCase.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import jpype

REALM = "EXAMPLE.COM"
HOST = "localhost"
SERVICE = f"hdfs/{HOST}@{REALM}"
SPNEGO = f"HTTP/{HOST}@{REALM}"
# The users a test logs in as: short name -> is an HDFS superuser (bob: for a key rotation).
USERS = {"hdfs-events": True, "alice": False, "bob": False}
SUPERGROUP = "supergroup"  # dfs.permissions.superusergroup's default


@dataclass(frozen=True, slots=True)
class Realm:
    kdc: Any  # org.apache.hadoop.minikdc.MiniKdc
    krb5_conf: Path
    service_keytab: Path
    keytabs: dict[str, Path]  # user short name -> keytab

    @classmethod
    def start(cls, work_dir: Path, *, ticket_lifetime_s: int | None = None) -> Realm:
        work_dir.mkdir(parents=True, exist_ok=True)
        minikdc = jpype.JClass("org.apache.hadoop.minikdc.MiniKdc")
        props = minikdc.createConf()
        props.setProperty(minikdc.KDC_BIND_ADDRESS, HOST)
        if ticket_lifetime_s is not None:
            # MiniKdc reads these in seconds; a short lifetime lets a test see renewals.
            props.setProperty(minikdc.MAX_TICKET_LIFETIME, str(ticket_lifetime_s))
            props.setProperty(minikdc.MIN_TICKET_LIFETIME, str(ticket_lifetime_s))
        kdc = minikdc(props, jpype.JClass("java.io.File")(str(work_dir)))
        kdc.start()
        # MiniKdc writes a krb5.conf (this realm, its KDC on TCP) and points this JVM at it
        # (java.security.krb5.conf); a client JVM needs the same file.
        krb5_conf = Path(str(kdc.getKrb5conf().getAbsolutePath()))
        service_keytab = work_dir / "hdfs.keytab"
        cls._create(kdc, service_keytab, f"hdfs/{HOST}", f"HTTP/{HOST}")
        keytabs = {}
        for user in USERS:
            keytabs[user] = work_dir / f"{user}.keytab"
            cls._create(kdc, keytabs[user], f"{user}/{HOST}")
        return cls(kdc, krb5_conf, service_keytab, keytabs)

    @staticmethod
    def _create(kdc: Any, keytab: Path, *principals: str) -> None:
        kdc.createPrincipal(jpype.JClass("java.io.File")(str(keytab)), *principals)
        os.chmod(keytab, 0o600)  # as an edge node keeps it (doctor refuses anything wider)

    @staticmethod
    def principal(user: str) -> str:
        return f"{user}/{HOST}@{REALM}"

    def rotate_key(self, user: str) -> None:
        """New keys for `user` in the KDC (kvno + 1), as `kadmin cpw -randkey` does: the keytab
        exported before is stale from now on, as an edge node's keytab is after a rotation it
        missed."""
        # MiniKdc keeps its Kerby server private and offers no key change: reach it by
        # reflection (a test kit only).
        field = self.kdc.getClass().getDeclaredField("simpleKdc")
        field.setAccessible(True)
        field.get(self.kdc).getKadmin().updateKeys(self.principal(user))

    def server_conf(self) -> dict[str, str]:
        """The NameNode's and DataNode's security settings (Kerberos RPC, block tokens, SPNEGO)
        and who is a superuser."""
        keytab = str(self.service_keytab)
        overrides = ";".join(f"{u}={SUPERGROUP if su else ''}"
                             for u, su in {"hdfs": True, **USERS}.items())
        return {
            "hadoop.security.authentication": "kerberos",
            "hadoop.security.authorization": "true",
            "dfs.namenode.kerberos.principal": SERVICE,
            "dfs.namenode.keytab.file": keytab,
            "dfs.datanode.kerberos.principal": SERVICE,
            "dfs.datanode.keytab.file": keytab,
            "dfs.web.authentication.kerberos.principal": SPNEGO,
            "dfs.web.authentication.kerberos.keytab": keytab,
            "dfs.block.access.token.enable": "true",
            # A secure DataNode must bind privileged ports (root, jsvc) or use SASL on data
            # transfer with HTTPS; Hadoop's own tests run it on ordinary ports with this flag.
            # MiniDFSCluster still tries the privileged-port starter first and prints its
            # "Unable to bind on specified streaming port in secure context" trace to
            # host.log, then starts the DataNode with Kerberos on ordinary ports.
            "ignore.secure.ports.for.testing": "true",
            "dfs.permissions.superusergroup": SUPERGROUP,
            # Who is in which group, without local Unix accounts: Groups reads these overrides
            # before the shell-based mapping.
            "hadoop.user.group.static.mapping.overrides": f"dr.who=;{overrides}",
            # Short tickets in a test: let Hadoop renew as soon as it is due.
            "hadoop.kerberos.min.seconds.before.relogin": "1",
        }

    def stop(self) -> None:
        self.kdc.stop()
