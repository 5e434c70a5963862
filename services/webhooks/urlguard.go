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

	"code.dny.dev/ssrf"
)

// publicGuard decides which addresses are public: code.dny.dev/ssrf's
// lists, generated from IANA's special-purpose address registries (so they
// are kept up to date there, not here). It refuses every IPv4
// special-purpose range (private, loopback, link-local, CGNAT,
// documentation, multicast, reserved) and every IPv6 address outside
// global unicast (2000::/3: loopback, unique local, link-local, multicast,
// IPv4-mapped, NAT64 64:ff9b::/96) plus the special ranges inside it, among
// them the transition prefixes that embed an IPv4 address: 6to4
// (2002::/16) and Teredo (2001::/32, within 2001::/23). Ports are not its
// business here: a receiver may listen on any.
var publicGuard = ssrf.New(ssrf.WithAnyPort())

// publicAddr reports whether a may be the address of a webhook receiver.
// An IPv4-mapped address is judged as the IPv4 address it is (resolvers
// hand IPv4 answers over in that form); an address with a zone is never a
// public one.
func publicAddr(a netip.Addr) bool {
	a = a.Unmap()
	if !a.IsValid() || a.Zone() != "" {
		return false
	}
	return publicGuard.SafeAddr(a) == nil
}

// neverPrefixes are refused even when private targets are allowed
// (ALMONER_WEBHOOK_ALLOW_PRIVATE, development): link-local networks, where
// cloud metadata services answer, and the metadata addresses outside them.
// Loopback and private networks stay open for a local receiver; the
// instance's credentials do not.
var neverPrefixes = []netip.Prefix{
	netip.MustParsePrefix("169.254.0.0/16"),     // link-local: 169.254.169.254 (AWS, GCP, Azure, OCI metadata), 169.254.170.2 (ECS task credentials)
	netip.MustParsePrefix("fe80::/10"),          // link-local
	netip.MustParsePrefix("fd00:ec2::254/128"),  // AWS metadata over IPv6 (a unique-local address, private otherwise)
	netip.MustParsePrefix("100.100.100.200/32"), // Alibaba Cloud metadata (in CGNAT space, private otherwise)
}

// The IPv6 forms that carry an IPv4 address, and where they carry it.
var (
	nat64      = netip.MustParsePrefix("64:ff9b::/96")   // RFC 6052: the last 32 bits
	nat64Local = netip.MustParsePrefix("64:ff9b:1::/48") // RFC 8215: the last 32 bits for a /96 inside it, bits 48-87 less octet 8 for the /48
	sixToFour  = netip.MustParsePrefix("2002::/16")      // RFC 3056: bits 16-47
	teredo     = netip.MustParsePrefix("2001::/32")      // RFC 4380: server bits 32-63, client the last 32 bits inverted
	v4Compat   = netip.MustParsePrefix("::/96")          // RFC 4291's deprecated IPv4-compatible form: the last 32 bits
)

// spellings returns a (without a zone) and every IPv4 address it may lead
// to: the address itself when IPv4-mapped, and the IPv4 address embedded
// by NAT64, 6to4, Teredo or the IPv4-compatible form. A check of all of
// them cannot be passed by writing 169.254.169.254 another way.
func spellings(a netip.Addr) []netip.Addr {
	a = a.WithZone("")
	out := []netip.Addr{a}
	if !a.Is6() {
		return out
	}
	if a.Is4In6() {
		return append(out, a.Unmap())
	}
	b := a.As16()
	v4 := func(x0, x1, x2, x3 byte) netip.Addr { return netip.AddrFrom4([4]byte{x0, x1, x2, x3}) }
	switch {
	case nat64.Contains(a), v4Compat.Contains(a):
		out = append(out, v4(b[12], b[13], b[14], b[15]))
	case nat64Local.Contains(a):
		out = append(out, v4(b[12], b[13], b[14], b[15]), v4(b[6], b[7], b[9], b[10]))
	case sixToFour.Contains(a):
		out = append(out, v4(b[2], b[3], b[4], b[5]))
	case teredo.Contains(a):
		out = append(out, v4(b[4], b[5], b[6], b[7]), v4(^b[12], ^b[13], ^b[14], ^b[15]))
	}
	return out
}

// neverAddr reports an address refused even in development: link-local or
// cloud metadata, in any spelling.
func neverAddr(a netip.Addr) bool {
	if !a.IsValid() {
		return true
	}
	for _, x := range spellings(a) {
		for _, p := range neverPrefixes {
			if p.Contains(x) {
				return true
			}
		}
	}
	return false
}

// urlPolicy checks endpoint URLs at registration and addresses at connect
// time.
type urlPolicy struct {
	// allowPrivate admits loopback and private targets: development only.
	// Link-local and cloud metadata addresses stay refused (neverAddr).
	allowPrivate bool
	resolver     *net.Resolver
	// lookup, when set, answers in place of resolver (tests).
	lookup func(ctx context.Context, host string) ([]netip.Addr, error)
}

// allowed reports whether a webhook may reach a.
func (p urlPolicy) allowed(a netip.Addr) bool {
	if p.allowPrivate {
		return !neverAddr(a)
	}
	return publicAddr(a)
}

// refusal is the reason given for an address the policy refuses.
func (p urlPolicy) refusal() string {
	if p.allowPrivate {
		return "'Url' must not point to a link-local or cloud metadata address."
	}
	return "'Url' must not point to a loopback, private, link-local or otherwise internal address."
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
	if a, err := netip.ParseAddr(strings.Trim(host, "[]")); err == nil {
		if !p.allowed(a) {
			return p.refusal()
		}
		return ""
	}
	lower := strings.ToLower(strings.TrimSuffix(host, "."))
	if lower == "localhost" || strings.HasSuffix(lower, ".localhost") {
		if p.allowPrivate {
			return ""
		}
		return p.refusal()
	}
	// Names are resolved in development too: a name of the metadata
	// service (metadata.google.internal) is refused like its address.
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	lookup := p.lookup
	if lookup == nil {
		lookup = func(ctx context.Context, host string) ([]netip.Addr, error) {
			return p.resolver.LookupNetIP(ctx, "ip", host)
		}
	}
	addrs, err := lookup(ctx, host)
	if err != nil || len(addrs) == 0 {
		return "'Url' host could not be resolved."
	}
	for _, a := range addrs {
		if !p.allowed(a) {
			return p.refusal()
		}
	}
	return ""
}

// control is the net.Dialer Control function: it runs after resolution,
// for the very address being dialled, so a DNS answer that changed since
// registration (or a redirect-free rebinding trick) cannot reach an
// internal address, nor, in development, a metadata one.
func (p urlPolicy) control(_, address string, _ syscall.RawConn) error {
	ap, err := netip.ParseAddrPort(address)
	if err != nil || !p.allowed(ap.Addr()) {
		return errAddrNotAllowed
	}
	return nil
}

// dialContext is the sender's dial function: d's own, whose resolver
// answers and whose Control (control) judges each address it dials. When
// the policy's lookup is set (tests), names are resolved with it instead
// and the first answer is dialled by d, Control and all, so a test can
// make a registered name answer an internal address at send time.
func (p urlPolicy) dialContext(d *net.Dialer) func(ctx context.Context, network, addr string) (net.Conn, error) {
	if p.lookup == nil {
		return d.DialContext
	}
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		host, port, err := net.SplitHostPort(addr)
		if err != nil {
			return nil, err
		}
		if _, err := netip.ParseAddr(host); err == nil {
			return d.DialContext(ctx, network, addr)
		}
		addrs, err := p.lookup(ctx, host)
		if err != nil || len(addrs) == 0 {
			return nil, &net.DNSError{Err: "no answer", Name: host, IsNotFound: true}
		}
		return d.DialContext(ctx, network, net.JoinHostPort(addrs[0].String(), port))
	}
}
