package webhooks

import (
	"context"
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
