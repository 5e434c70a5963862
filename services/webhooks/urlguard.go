package webhooks

import (
	"context"
	"errors"
	"net"
	"net/netip"
	"net/url"
	"strings"
	"syscall"
	"time"
)

// blockedPrefixes are the networks a webhook may never reach: loopback,
// private, link-local, CGNAT, multicast, unspecified and the other
// special-purpose ranges that lead inside a network rather than to a
// public receiver. Addresses are unmapped first, so ::ffff:127.0.0.1 is
// checked as 127.0.0.1.
var blockedPrefixes = func() []netip.Prefix {
	var out []netip.Prefix
	for _, s := range []string{
		"0.0.0.0/8",       // "this network", unspecified
		"10.0.0.0/8",      // private
		"100.64.0.0/10",   // CGNAT
		"127.0.0.0/8",     // loopback
		"169.254.0.0/16",  // link-local, cloud metadata
		"172.16.0.0/12",   // private
		"192.0.0.0/24",    // IETF protocol assignments
		"192.0.2.0/24",    // documentation
		"192.168.0.0/16",  // private
		"198.18.0.0/15",   // benchmarking
		"198.51.100.0/24", // documentation
		"203.0.113.0/24",  // documentation
		"224.0.0.0/4",     // multicast
		"240.0.0.0/4",     // reserved, broadcast
		"::/128",          // unspecified
		"::1/128",         // loopback
		"64:ff9b::/96",    // NAT64: embeds an IPv4 address
		"64:ff9b:1::/48",  // local NAT64
		"100::/64",        // discard
		"2001:db8::/32",   // documentation
		"fc00::/7",        // unique local (private)
		"fe80::/10",       // link-local
		"fec0::/10",       // old site-local
		"ff00::/8",        // multicast
	} {
		out = append(out, netip.MustParsePrefix(s))
	}
	return out
}()

// publicAddr reports whether a may be the address of a webhook receiver.
func publicAddr(a netip.Addr) bool {
	a = a.Unmap()
	if !a.IsValid() {
		return false
	}
	for _, p := range blockedPrefixes {
		if p.Contains(a) {
			return false
		}
	}
	return true
}

// urlPolicy checks endpoint URLs at registration and addresses at connect
// time.
type urlPolicy struct {
	// allowPrivate admits loopback and private targets: development only.
	allowPrivate bool
	resolver     *net.Resolver
}

// errAddrNotAllowed is the connect-time refusal of an internal address.
var errAddrNotAllowed = errors.New("address not allowed")

// validateURL returns the reason raw is not an acceptable endpoint URL,
// or "" when it is: https, no user info, a host that is (or resolves only
// to) public addresses.
func (p urlPolicy) validateURL(ctx context.Context, raw string) string {
	raw = strings.TrimSpace(raw)
	if raw == "" {
		return "'Url' must not be empty."
	}
	if len(raw) > maxURL {
		return "'Url' must be 2048 characters or fewer."
	}
	u, err := url.Parse(raw)
	if err != nil || !u.IsAbs() || u.Opaque != "" {
		return "'Url' must be an absolute https URL."
	}
	if !strings.EqualFold(u.Scheme, "https") {
		return "'Url' must use https."
	}
	if u.User != nil {
		return "'Url' must not contain user information."
	}
	host := u.Hostname()
	if host == "" {
		return "'Url' must name a host."
	}
	if u.Fragment != "" {
		return "'Url' must not contain a fragment."
	}
	if p.allowPrivate {
		return ""
	}
	if a, err := netip.ParseAddr(strings.Trim(host, "[]")); err == nil {
		if !publicAddr(a) {
			return "'Url' must not point to a loopback, private, link-local or otherwise internal address."
		}
		return ""
	}
	lower := strings.ToLower(strings.TrimSuffix(host, "."))
	if lower == "localhost" || strings.HasSuffix(lower, ".localhost") {
		return "'Url' must not point to a loopback, private, link-local or otherwise internal address."
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	addrs, err := p.resolver.LookupNetIP(ctx, "ip", host)
	if err != nil || len(addrs) == 0 {
		return "'Url' host could not be resolved."
	}
	for _, a := range addrs {
		if !publicAddr(a) {
			return "'Url' must not point to a loopback, private, link-local or otherwise internal address."
		}
	}
	return ""
}

// control is the net.Dialer Control function: it runs after resolution,
// for the very address being dialled, so a DNS answer that changed since
// registration (or a redirect-free rebinding trick) cannot reach an
// internal address.
func (p urlPolicy) control(_, address string, _ syscall.RawConn) error {
	if p.allowPrivate {
		return nil
	}
	ap, err := netip.ParseAddrPort(address)
	if err != nil || !publicAddr(ap.Addr()) {
		return errAddrNotAllowed
	}
	return nil
}
