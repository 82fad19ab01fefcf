#!/bin/sh
# Installs mcpdctl for the mcpd devcontainer feature (devcontainer-feature.json).
#
# Options arrive as environment variables: BINARY (a prebuilt mcpdctl: a
# path, or an http(s) URL), VERSION (for go install), INSTALLPATH. Where the
# prebuilt binary comes from, first found wins: BINARY; mcpdctl in this
# feature's directory; go install github.com/mcpd-dev/mcpd/cmd/mcpdctl@VERSION
# when Go is in the image.
#
# It also writes /etc/profile.d/mcpd.sh with the containerEnv the feature
# declares (MCPD_SOCKET), for shells that do not inherit the container's
# environment (an sshd in the container, su -).
#
# MCPD_FEATURE_ROOT, when set, is prefixed to every path written: a scratch
# root for tests (and MCPD_FEATURE_GO replaces /usr/local/go/bin/go).
set -eu

MCPD_SOCKET_IN_CONTAINER=/run/mcpd-host/mcpd.sock
MODULE=github.com/mcpd-dev/mcpd/cmd/mcpdctl

root=${MCPD_FEATURE_ROOT:-}
binary=${BINARY:-}
version=${VERSION:-latest}
install_path=${INSTALLPATH:-/usr/local/bin}
here=$(cd "$(dirname "$0")" && pwd)

say() { echo "mcpd feature: $*"; }
fail() { echo "mcpd feature: $*" >&2; exit 1; }

case "$install_path" in
/*) ;;
*) fail "installPath must be absolute, not \"$install_path\"" ;;
esac
dest_dir="$root$install_path"
dest="$dest_dir/mcpdctl"
mkdir -p "$dest_dir"

if [ -z "$binary" ] && [ -f "$here/mcpdctl" ]; then
	binary="$here/mcpdctl"
fi

case "$binary" in
http://* | https://*)
	tmp="$dest.download"
	if command -v curl >/dev/null 2>&1; then
		curl -fsSL -o "$tmp" "$binary" || fail "cannot download $binary"
	elif command -v wget >/dev/null 2>&1; then
		wget -q -O "$tmp" "$binary" || fail "cannot download $binary"
	else
		fail "binary is a URL but neither curl nor wget is installed"
	fi
	chmod 0755 "$tmp"
	mv -f "$tmp" "$dest"
	say "installed mcpdctl from $binary"
	;;
"")
	gobin=$(command -v go 2>/dev/null || true)
	# The Go feature installs to /usr/local/go, on PATH only once the
	# container runs (MCPD_FEATURE_GO: another place, for tests).
	fallback=${MCPD_FEATURE_GO:-/usr/local/go/bin/go}
	[ -n "$gobin" ] || [ ! -x "$fallback" ] || gobin=$fallback
	[ -n "$gobin" ] || fail "no prebuilt mcpdctl (option binary, or mcpdctl in the feature's directory) and no Go to build one"
	GOBIN="$dest_dir" "$gobin" install "$MODULE@$version" || fail "go install $MODULE@$version failed"
	say "installed mcpdctl with go install $MODULE@$version"
	;;
*)
	[ -f "$binary" ] || case "$binary" in
	/*) fail "binary $binary: no such file" ;;
	*) [ -f "$here/$binary" ] && binary="$here/$binary" || fail "binary $binary: no such file" ;;
	esac
	cp "$binary" "$dest.tmp"
	chmod 0755 "$dest.tmp"
	mv -f "$dest.tmp" "$dest"
	say "installed mcpdctl from $binary"
	;;
esac
[ -x "$dest" ] || fail "$dest was not installed"

profile_dir="$root/etc/profile.d"
mkdir -p "$profile_dir"
cat >"$profile_dir/mcpd.sh" <<PROFILE
# mcpd devcontainer feature: the host's mcpd socket, mounted into the container.
export MCPD_SOCKET="\${MCPD_SOCKET:-$MCPD_SOCKET_IN_CONTAINER}"
PROFILE
chmod 0644 "$profile_dir/mcpd.sh"
say "MCPD_SOCKET=$MCPD_SOCKET_IN_CONTAINER (the host's \$XDG_RUNTIME_DIR/mcpd, mounted)"
