package doctor

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"os"
	"os/user"
	"path/filepath"
	"strconv"
	"syscall"
	"time"
)

func lookupAccount(name string) (Account, error) {
	u, err := user.Lookup(name)
	if err != nil {
		return Account{}, fmt.Errorf("doctor: %w", err)
	}
	uid, err := strconv.ParseUint(u.Uid, 10, 32)
	if err != nil {
		return Account{}, fmt.Errorf("doctor: user %s: uid %q: %w", name, u.Uid, err)
	}
	a := Account{Name: u.Username, UID: uint32(uid)}
	gids, err := u.GroupIds()
	if err != nil {
		return Account{}, fmt.Errorf("doctor: groups of %s: %w", name, err)
	}
	for _, s := range gids {
		gid, err := strconv.ParseUint(s, 10, 32)
		if err != nil {
			continue
		}
		g := Group{GID: uint32(gid), Name: s}
		if gr, err := user.LookupGroupId(s); err == nil {
			g.Name = gr.Name
		}
		a.Groups = append(a.Groups, g)
	}
	return a, nil
}

func lookupGroup(name string) (Group, error) {
	g, err := user.LookupGroup(name)
	if err != nil {
		return Group{}, fmt.Errorf("doctor: %w", err)
	}
	gid, err := strconv.ParseUint(g.Gid, 10, 32)
	if err != nil {
		return Group{}, fmt.Errorf("doctor: group %s: gid %q: %w", name, g.Gid, err)
	}
	return Group{Name: g.Name, GID: uint32(gid)}, nil
}

func openDevice(path string) error {
	f, err := os.OpenFile(path, os.O_RDWR|syscall.O_NONBLOCK, 0)
	if err != nil {
		return err
	}
	return f.Close()
}

func isBusy(err error) bool { return errors.Is(err, syscall.EBUSY) }

// accessProblem says why acct cannot read and write the node at path, or
// returns "" when it can.
func accessProblem(path string, acct Account, wantGroup string) string {
	fi, err := os.Stat(path)
	if err != nil {
		return err.Error()
	}
	uid, gid, ok := owner(fi)
	if !ok || acct.UID == 0 {
		return ""
	}
	perm := fi.Mode().Perm()
	if uid == acct.UID && perm&0o600 == 0o600 {
		return ""
	}
	inGroup := false
	for _, g := range acct.Groups {
		if g.GID == gid {
			inGroup = true
		}
	}
	if inGroup && perm&0o060 == 0o060 {
		return ""
	}
	if perm&0o006 == 0o006 {
		return ""
	}
	why := "not in its group"
	if inGroup {
		why = "its group lacks read-write"
	}
	return fmt.Sprintf("owned by %s:%s mode %04o, user %s cannot read-write it (%s; want group %s, mode 0660)",
		userName(uid), groupName(gid), perm, acct.Name, why, wantGroup)
}

func userName(uid uint32) string {
	s := strconv.FormatUint(uint64(uid), 10)
	if u, err := user.LookupId(s); err == nil {
		return u.Username
	}
	return s
}

func groupName(gid uint32) string {
	s := strconv.FormatUint(uint64(gid), 10)
	if g, err := user.LookupGroupId(s); err == nil {
		return g.Name
	}
	return s
}

// SystemClockSynced reports whether the kernel's clock is synchronised: the
// kernel's NTP status (adjtimex, set by systemd-timesyncd, chrony and ntpd)
// or systemd-timesyncd's flag file root/run/systemd/timesync/synchronized.
func SystemClockSynced(ctx context.Context, root string) (bool, string, error) {
	if _, err := os.Stat(filepath.Join(root, "run/systemd/timesync/synchronized")); err == nil {
		return true, "systemd-timesyncd", nil
	}
	synced, err := kernelSynced()
	if err != nil {
		return false, "", err
	}
	if synced {
		return true, "kernel NTP status", nil
	}
	return false, "kernel reports the clock unsynchronised (adjtimex STA_UNSYNC) and systemd-timesyncd has not synchronised", nil
}

func describeDialError(addr string, err error, timeout time.Duration) (detail, fix string) {
	var dnsErr *net.DNSError
	var nerr net.Error
	switch {
	case errors.As(err, &dnsErr):
		return fmt.Sprintf("cannot resolve %s: %v", dnsErr.Name, dnsErr.Err),
			"check the network and DNS (`resolvectl status`, /etc/resolv.conf) and the host in gateway.url"
	case errors.Is(err, syscall.ECONNREFUSED):
		return "connection to " + addr + " refused",
			"check that the gateway runs and that gateway.url has the right host and port"
	case errors.Is(err, syscall.ENETUNREACH), errors.Is(err, syscall.EHOSTUNREACH):
		return "no route to " + addr + ": " + err.Error(),
			"check the network connection (`ip route`, Wi-Fi/Ethernet link)"
	case errors.Is(err, context.DeadlineExceeded), errors.As(err, &nerr) && nerr.Timeout():
		return fmt.Sprintf("no answer from %s within %v", addr, timeout),
			"check the network, firewall or proxy between the board and the gateway"
	}
	return "cannot connect to " + addr + ": " + err.Error(), "check the network and gateway.url"
}

func describeTLSError(addr string, err error) (detail, fix string) {
	var ua x509.UnknownAuthorityError
	var ci x509.CertificateInvalidError
	var he x509.HostnameError
	var rh tls.RecordHeaderError
	var nerr net.Error
	switch {
	case errors.As(err, &ua):
		return "TLS to " + addr + ": certificate signed by an unknown authority",
			"install the CA (`sudo apt install ca-certificates`, or the gateway's private CA into /usr/local/share/ca-certificates and `sudo update-ca-certificates`)"
	case errors.As(err, &ci) && ci.Reason == x509.Expired:
		return "TLS to " + addr + ": certificate expired or not yet valid (" + ci.Detail + ")",
			"check the clock first (see the clock check); if it is right, the gateway's certificate needs renewing"
	case errors.As(err, &he):
		return "TLS to " + addr + ": " + he.Error(),
			"use the host name the certificate is issued for in gateway.url"
	case errors.As(err, &rh):
		return addr + " does not speak TLS",
			"check the port in gateway.url (wss:// needs the gateway's TLS port)"
	case errors.Is(err, context.DeadlineExceeded), errors.As(err, &nerr) && nerr.Timeout():
		return "TLS handshake with " + addr + " timed out", "check the network, firewall or proxy between the board and the gateway"
	}
	return "TLS to " + addr + ": " + err.Error(), "check gateway.url and the gateway's certificate"
}
