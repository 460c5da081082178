#!/bin/sh
# Lays out what the image holds besides the binary, in $ROOTFS (the root file
# system) and ${ROOTFS}-data (the data directory, copied in owned by the
# switchyard user): /etc/passwd and /etc/group with the non-root user 65532,
# the CA bundle $CA_BUNDLE, a sticky /tmp, /etc/switchyard for the config file
# and /var/lib/switchyard for the SQLite store. Used by the Containerfile's
# build stage and by deploy/build-image.sh, so that both give the same image.
set -eu
: "${ROOTFS:?}" "${CA_BUNDLE:?}"
mkdir -p "$ROOTFS/etc/ssl/certs" "$ROOTFS/etc/switchyard" "$ROOTFS/tmp" "$ROOTFS/var/lib" "$ROOTFS-data/switchyard"
cp "$CA_BUNDLE" "$ROOTFS/etc/ssl/certs/ca-certificates.crt"
chmod 0644 "$ROOTFS/etc/ssl/certs/ca-certificates.crt"
printf 'root:x:0:0:root:/root:/sbin/nologin\nswitchyard:x:65532:65532:switchyard:/var/lib/switchyard:/sbin/nologin\n' >"$ROOTFS/etc/passwd"
printf 'root:x:0:\nswitchyard:x:65532:\n' >"$ROOTFS/etc/group"
chmod 0644 "$ROOTFS/etc/passwd" "$ROOTFS/etc/group"
chmod 1777 "$ROOTFS/tmp"
chmod 0755 "$ROOTFS/etc/switchyard" "$ROOTFS-data/switchyard"
