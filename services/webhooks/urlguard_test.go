package webhooks

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"strings"
	"testing"
)

// offlineResolver answers every lookup from a fixed table, so the tests do
// not depend on DNS.
func offlineResolver(t testing.TB, table map[string]string) *net.Resolver {
	return &net.Resolver{PreferGo: true, Dial: func(ctx context.Context, network, address string) (net.Conn, error) {
		return nil, &net.DNSError{Err: "offline", IsNotFound: true}
	}}
}

func TestValidateURL(t *testing.T) {
	t.Parallel()
	p := urlPolicy{resolver: offlineResolver(t, nil)}
	internal := "must not point to a loopback"
	cases := []struct {
		url  string
		want string // substring of the reason; "" means accepted
	}{
		{"https://203.0.114.7/hook", ""},
		{"https://[2606:4700::1]/hook", ""},
		{"https://8.8.8.8:8443/x?y=1", ""},
		{"http://8.8.8.8/hook", "must use https"},
		{"ftp://8.8.8.8/hook", "must use https"},
		{"https://user:pass@8.8.8.8/hook", "user information"},
		{"https://user@8.8.8.8/hook", "user information"},
		{"https://127.0.0.1/hook", internal},
		{"https://127.1.2.3/hook", internal},
		{"https://localhost/hook", internal},
		{"https://LOCALHOST./hook", internal},
		{"https://api.localhost/hook", internal},
		{"https://[::1]/hook", internal},
		{"https://[::ffff:7f00:1]/hook", internal},
		{"https://[::ffff:127.0.0.1]/hook", internal},
		{"https://[::ffff:10.0.0.1]/hook", internal},
		{"https://169.254.169.254/latest/meta-data", internal},
		{"https://10.0.0.1/hook", internal},
		{"https://172.16.5.4/hook", internal},
		{"https://192.168.1.1/hook", internal},
		{"https://100.64.0.1/hook", internal},
		{"https://0.0.0.0/hook", internal},
		{"https://[::]/hook", internal},
		{"https://224.0.0.1/hook", internal},
		{"https://[ff02::1]/hook", internal},
		{"https://[fe80::1]/hook", internal},
		{"https://[fd00::1]/hook", internal},
		{"https://[64:ff9b::a00:1]/hook", internal},
		{"https://[64:ff9b::8.8.8.8]/hook", internal},                     // NAT64, even of a public address
		{"https://[2002:a9fe:a9fe::1]/hook", internal},                    // 6to4 of 169.254.169.254
		{"https://[2002:808:808::1]/hook", internal},                      // 6to4, even of a public address
		{"https://[2001:0:4136:e378:8000:63bf:3fff:fdd2]/hook", internal}, // Teredo
		{"https://[::a9fe:a9fe]/hook", internal},                          // IPv4-compatible 169.254.169.254
		{"https://[::ffff:169.254.169.254]/hook", internal},
		{"https://[fd00:ec2::254]/latest/meta-data", internal},
		{"https://169.254.170.2/v2/credentials", internal},
		{"https://[fe80::1%25eth0]/hook", internal},
		{"https://192.88.99.1/hook", internal}, // 6to4 relay anycast
		{"https://[3fff::1]/hook", internal},   // documentation (RFC 9637)
		{"https://100.100.100.200/hook", internal},
		{"https://does-not-resolve.invalid/hook", "could not be resolved"},
		{"", "must not be empty"},
		{"not a url", "absolute https URL"},
		{"https:///path-only", "must name a host"},
		{"https://8.8.8.8/#frag", "fragment"},
	}
	for _, tc := range cases {
		got := p.validateURL(context.Background(), tc.url)
		if (tc.want == "") != (got == "") || !strings.Contains(got, tc.want) {
			t.Errorf("validateURL(%q) = %q, want %q", tc.url, got, tc.want)
		}
	}
	// The development flag admits loopback targets, never plain http.
	dev := urlPolicy{allowPrivate: true}
	if got := dev.validateURL(context.Background(), "https://127.0.0.1:8443/x"); got != "" {
		t.Errorf("allowPrivate: %q", got)
	}
	if got := dev.validateURL(context.Background(), "http://127.0.0.1/x"); got == "" {
		t.Error("allowPrivate admitted http")
	}
}

// metadataSpellings are the cloud metadata addresses and link-local
// ones, in every way an IPv6 address can lead to them.
func metadataSpellings() []string {
	var out []string
	for _, s := range []string{"169.254.169.254", "169.254.170.2", "169.254.0.1", "100.100.100.200"} {
		b := netip.MustParseAddr(s).As4()
		hex := func(x, y byte) string { return strings.TrimLeft(fmt.Sprintf("%02x%02x", x, y), "0") }
		hi, lo := hex(b[0], b[1]), hex(b[2], b[3])
		nhi, nlo := hex(^b[0], ^b[1]), hex(^b[2], ^b[3])
		out = append(out, s,
			"::ffff:"+s, "::ffff:"+hi+":"+lo, // IPv4-mapped
			"::"+s, "::"+hi+":"+lo, // IPv4-compatible
			"64:ff9b::"+s, "64:ff9b::"+hi+":"+lo, // NAT64
			"64:ff9b:1::"+hi+":"+lo,                           // local-use NAT64, /96
			"2002:"+hi+":"+lo+"::", "2002:"+hi+":"+lo+":1::1", // 6to4
			"2001:0:"+hi+":"+lo+"::1",                 // Teredo server
			"2001:0:4136:e378:8000:63bf:"+nhi+":"+nlo, // Teredo client
		)
	}
	return append(out, "fd00:ec2::254", "fe80::1", "fe80::a9fe:a9fe", "febf::1", "fe80::1%eth0")
}

// TestAllowPrivateRefusesMetadata: with ALMONER_WEBHOOK_ALLOW_PRIVATE a
// local receiver is reachable (loopback, private, unique local), but
// link-local and cloud metadata addresses are refused in every spelling,
// at registration (address literals and names resolving to them) and at
// connect time; and so they are without the flag.
func TestAllowPrivateRefusesMetadata(t *testing.T) {
	t.Parallel()
	names := map[string][]netip.Addr{
		"metadata.google.internal": {netip.MustParseAddr("169.254.169.254")},
		"mapped.example":           {netip.MustParseAddr("::ffff:169.254.169.254")},
		"mixed.example":            {netip.MustParseAddr("10.0.0.5"), netip.MustParseAddr("64:ff9b::a9fe:a9fe")},
		"receiver.internal":        {netip.MustParseAddr("10.0.0.5"), netip.MustParseAddr("fd00::5")},
	}
	lookup := func(_ context.Context, host string) ([]netip.Addr, error) {
		if a, ok := names[host]; ok {
			return a, nil
		}
		return nil, &net.DNSError{Err: "no such host", IsNotFound: true}
	}
	dev := urlPolicy{allowPrivate: true, lookup: lookup}
	prod := urlPolicy{lookup: lookup}
	for _, ok := range []string{"127.0.0.1", "10.1.2.3", "192.168.0.10", "172.16.0.1", "100.64.0.1", "::1", "fd00::1", "fd00:ec2::253"} {
		host := ok
		if strings.Contains(ok, ":") {
			host = "[" + ok + "]"
		}
		if got := dev.validateURL(context.Background(), "https://"+host+":8443/hook"); got != "" {
			t.Errorf("allowPrivate refused %s: %q", ok, got)
		}
		if err := dev.control("tcp", net.JoinHostPort(ok, "8443"), nil); err != nil {
			t.Errorf("allowPrivate control refused %s: %v", ok, err)
		}
	}
	for _, bad := range metadataSpellings() {
		a, err := netip.ParseAddr(bad)
		if err != nil {
			t.Fatalf("spelling %q: %v", bad, err)
		}
		host := bad
		if a.Is6() {
			host = "[" + strings.ReplaceAll(bad, "%", "%25") + "]"
		}
		for name, p := range map[string]urlPolicy{"allowPrivate": dev, "production": prod} {
			if got := p.validateURL(context.Background(), "https://"+host+"/latest/meta-data"); got == "" {
				t.Errorf("%s: registration accepted %s", name, bad)
			}
			if err := p.control("tcp", net.JoinHostPort(bad, "80"), nil); err == nil {
				t.Errorf("%s: connect-time check admitted %s", name, bad)
			}
		}
	}
	for host, want := range map[string]bool{"metadata.google.internal": false, "mapped.example": false, "mixed.example": false, "receiver.internal": true, "localhost": true} {
		if got := dev.validateURL(context.Background(), "https://"+host+"/hook"); (got == "") != want {
			t.Errorf("allowPrivate %s: %q, want accepted=%v", host, got, want)
		}
	}
	if got := dev.validateURL(context.Background(), "https://169.254.169.254/"); !strings.Contains(got, "link-local or cloud metadata") {
		t.Errorf("allowPrivate refusal reads %q", got)
	}
}

func TestDialControl(t *testing.T) {
	t.Parallel()
	p := urlPolicy{}
	cases := []struct {
		addr string
		ok   bool
	}{
		{"8.8.8.8:443", true},
		{"[2606:4700::1]:443", true},
		{"127.0.0.1:443", false},
		{"[::1]:443", false},
		{"[::ffff:127.0.0.1]:443", false},
		{"10.1.2.3:443", false},
		{"169.254.169.254:80", false},
		{"100.100.1.1:443", false},
		{"[2002:a9fe:a9fe::1]:443", false},
		{"[2001:0:4136:e378:8000:63bf:3fff:fdd2]:443", false},
		{"[64:ff9b::a9fe:a9fe]:443", false},
		{"[fe80::1%eth0]:443", false},
		{"8.8.8.8:8443", true},
		{"garbage", false},
	}
	for _, tc := range cases {
		if err := p.control("tcp", tc.addr, nil); (err == nil) != tc.ok {
			t.Errorf("control(%s) = %v, want ok=%v", tc.addr, err, tc.ok)
		}
	}
	if err := (urlPolicy{allowPrivate: true}).control("tcp", "127.0.0.1:1", nil); err != nil {
		t.Errorf("allowPrivate control: %v", err)
	}
	if err := (urlPolicy{allowPrivate: true}).control("tcp", "169.254.169.254:80", nil); err == nil {
		t.Error("allowPrivate control admitted the metadata address")
	}
}

// FuzzValidateURL: no input panics, and an accepted URL is https, has no
// user info, and names a host that is not an internal address literal.
func FuzzValidateURL(f *testing.F) {
	for _, s := range []string{"https://8.8.8.8/", "https://[::ffff:7f00:1]/", "https://u:p@x/", "http://x", "https://0x7f.1/", "https://2130706433/", "https://[::1%25eth0]/"} {
		f.Add(s)
	}
	p := urlPolicy{resolver: offlineResolver(f, nil)}
	f.Fuzz(func(t *testing.T, raw string) {
		if p.validateURL(context.Background(), raw) != "" {
			return
		}
		u, err := url.Parse(strings.TrimSpace(raw))
		if err != nil || !strings.EqualFold(u.Scheme, "https") || u.User != nil || u.Hostname() == "" {
			t.Fatalf("accepted %q", raw)
		}
		a, err := netip.ParseAddr(u.Hostname())
		if err != nil {
			t.Fatalf("accepted %q whose host %q is not an address, with an offline resolver", raw, u.Hostname())
		}
		if !publicAddr(a) {
			t.Fatalf("accepted internal %q", raw)
		}
	})
}

// FuzzAllowPrivate: whatever the development policy accepts as an address
// literal leads to no link-local or metadata address by any spelling.
func FuzzAllowPrivate(f *testing.F) {
	for _, s := range metadataSpellings() {
		f.Add(netip.MustParseAddr(s).AsSlice())
	}
	f.Add([]byte{127, 0, 0, 1})
	dev := urlPolicy{allowPrivate: true}
	f.Fuzz(func(t *testing.T, b []byte) {
		a, ok := netip.AddrFromSlice(b)
		if !ok {
			return
		}
		if dev.control("tcp", netip.AddrPortFrom(a, 443).String(), nil) != nil {
			return
		}
		for _, x := range spellings(a) {
			if x.Is4() && netip.MustParsePrefix("169.254.0.0/16").Contains(x) {
				t.Fatalf("admitted %s, which leads to %s", a, x)
			}
		}
	})
}
