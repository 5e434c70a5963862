package ratelimit

import (
	"context"
	"net"
	"net/netip"
	"strings"
	"testing"

	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/peer"
)

func TestParseTrustedProxies(t *testing.T) {
	t.Parallel()
	got, err := ParseTrustedProxies(" 10.0.0.0/8, 192.168.1.7 ,fd00::/8,, 10.1.2.3/8")
	if err != nil {
		t.Fatal(err)
	}
	want := "[10.0.0.0/8 192.168.1.7/32 fd00::/8 10.0.0.0/8]"
	if s := fmtPrefixes(got); s != want {
		t.Errorf("got %s, want %s", s, want)
	}
	if p, err := ParseTrustedProxies(""); err != nil || len(p) != 0 {
		t.Errorf("empty = %v, %v", p, err)
	}
	for _, bad := range []string{"10.0.0.0/33", "example.com", "10.0.0.0/8,nope"} {
		if _, err := ParseTrustedProxies(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

func fmtPrefixes(ps []netip.Prefix) string {
	s := make([]string, len(ps))
	for i, p := range ps {
		s[i] = p.String()
	}
	return "[" + strings.Join(s, " ") + "]"
}

func TestClientIP(t *testing.T) {
	t.Parallel()
	trusted, _ := ParseTrustedProxies("10.0.0.0/8,127.0.0.1")
	cases := []struct {
		name   string
		remote string
		xff    []string
		want   string
	}{
		{"direct client", "203.0.113.5:4000", nil, "203.0.113.5"},
		{"untrusted peer's header ignored", "203.0.113.5:4000", []string{"198.51.100.1"}, "203.0.113.5"},
		{"trusted proxy", "10.0.0.2:80", []string{"198.51.100.1"}, "198.51.100.1"},
		{"client-written hops ignored", "10.0.0.2:80", []string{"1.1.1.1, 2.2.2.2, 198.51.100.1"}, "198.51.100.1"},
		{"chain of proxies", "10.0.0.2:80", []string{"198.51.100.1, 10.9.9.9"}, "198.51.100.1"},
		{"several headers", "10.0.0.2:80", []string{"1.1.1.1", "198.51.100.1, 10.0.0.3"}, "198.51.100.1"},
		{"all hops trusted", "10.0.0.2:80", []string{"10.0.0.5, 10.0.0.4"}, "10.0.0.5"},
		{"garbage stops the walk", "10.0.0.2:80", []string{"junk, 10.0.0.4"}, "10.0.0.4"},
		{"trusted proxy, no header", "127.0.0.1:5", nil, "127.0.0.1"},
		{"ipv6 peer", "[2001:db8::1]:443", nil, "2001:db8::1"},
		{"ipv6 hop with port", "10.0.0.2:80", []string{"[2001:db8::2]:1234"}, "2001:db8::2"},
		{"v4 hop with port", "10.0.0.2:80", []string{"198.51.100.1:999"}, "198.51.100.1"},
		{"mapped v4", "[::ffff:203.0.113.5]:1", nil, "203.0.113.5"},
		{"peer without port", "203.0.113.5", nil, "203.0.113.5"},
	}
	for _, c := range cases {
		got, ok := ClientIP(c.remote, c.xff, trusted)
		if !ok || got.String() != c.want {
			t.Errorf("%s: ClientIP = %v, %v; want %s", c.name, got, ok, c.want)
		}
	}
	if _, ok := ClientIP("not an address", nil, trusted); ok {
		t.Error("a bad peer address was accepted")
	}
	// With no trusted proxies the header never matters.
	if got, _ := ClientIP("127.0.0.1:1", []string{"198.51.100.1"}, nil); got.String() != "127.0.0.1" {
		t.Errorf("untrusted loopback: %v", got)
	}
}

func TestKey(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"203.0.113.5":          "203.0.113.5",
		"::ffff:203.0.113.5":   "203.0.113.5",
		"2001:db8:1:2:3:4:5:6": "2001:db8:1:2::/64",
	} {
		if got := Key(netip.MustParseAddr(in)); got != want {
			t.Errorf("Key(%s) = %s, want %s", in, got, want)
		}
	}
}

func TestFromIncoming(t *testing.T) {
	t.Parallel()
	ctx := metadata.NewIncomingContext(context.Background(), metadata.Pairs(MetadataKey, "198.51.100.4"))
	if a, ok := FromIncoming(ctx); !ok || a.String() != "198.51.100.4" {
		t.Errorf("from metadata: %v %v", a, ok)
	}
	ctx = peer.NewContext(context.Background(), &peer.Peer{Addr: &net.TCPAddr{IP: net.ParseIP("10.2.3.4"), Port: 9}})
	if a, ok := FromIncoming(ctx); !ok || a.String() != "10.2.3.4" {
		t.Errorf("from peer: %v %v", a, ok)
	}
	if _, ok := FromIncoming(context.Background()); ok {
		t.Error("no address expected")
	}
}

// FuzzClientIP: whatever the headers say, the answer is a valid address
// and, from an untrusted peer, always the peer.
func FuzzClientIP(f *testing.F) {
	f.Add("10.0.0.2:80", "198.51.100.1, 10.0.0.3")
	f.Add("203.0.113.5:1", "1.2.3.4")
	f.Add("[::1]:1", "[2001:db8::1]:80,junk")
	trusted, _ := ParseTrustedProxies("10.0.0.0/8,::1")
	f.Fuzz(func(t *testing.T, remote, xff string) {
		got, ok := ClientIP(remote, []string{xff}, trusted)
		if !ok {
			return
		}
		if !got.IsValid() || got.Zone() != "" || got.Is4In6() {
			t.Fatalf("ClientIP(%q, %q) = %v", remote, xff, got)
		}
		if alone, _ := ClientIP(remote, nil, nil); !trustedAddr(alone, trusted) && got != alone {
			t.Fatalf("untrusted peer %v, but the header chose %v", alone, got)
		}
		_ = Key(got)
	})
}
