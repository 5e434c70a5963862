package ratelimit

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"strings"

	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/peer"
)

// MetadataKey is the gRPC metadata key under which the gateway forwards the
// client's address. The gateway sets it on every call and forwards no
// client header of that name (its incoming-header allow-list drops them),
// so services may trust it as they trust the principal.
const MetadataKey = "x-almoner-client-ip"

// ParseTrustedProxies parses ALMONER_TRUSTED_PROXIES: comma-separated CIDRs
// (10.0.0.0/8) or single addresses. Empty means no proxy is trusted.
func ParseTrustedProxies(s string) ([]netip.Prefix, error) {
	var out []netip.Prefix
	for _, part := range strings.Split(s, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		if p, err := netip.ParsePrefix(part); err == nil {
			out = append(out, p.Masked())
			continue
		}
		a, err := netip.ParseAddr(part)
		if err != nil {
			return nil, fmt.Errorf("trusted proxy %q: want a CIDR such as 10.0.0.0/8 or an address", part)
		}
		a = a.Unmap().WithZone("")
		out = append(out, netip.PrefixFrom(a, a.BitLen()))
	}
	return out, nil
}

func trustedAddr(a netip.Addr, trusted []netip.Prefix) bool {
	for _, p := range trusted {
		if p.Contains(a) {
			return true
		}
	}
	return false
}

// ParseAddr reads one address as proxies write it: a bare IPv4 or IPv6
// address, "[v6]" or either with a port; zones are dropped and IPv4-mapped
// IPv6 addresses become IPv4.
func ParseAddr(s string) (netip.Addr, bool) {
	s = strings.TrimSpace(s)
	if s == "" || len(s) > 64 {
		return netip.Addr{}, false
	}
	a, err := netip.ParseAddr(s)
	if err != nil {
		ap, perr := netip.ParseAddrPort(s)
		if perr != nil {
			if strings.HasPrefix(s, "[") && strings.HasSuffix(s, "]") {
				a, err = netip.ParseAddr(s[1 : len(s)-1])
			}
			if err != nil {
				return netip.Addr{}, false
			}
		} else {
			a = ap.Addr()
		}
	}
	return a.Unmap().WithZone(""), true
}

// ClientIP returns the address of the client behind an HTTP request.
//
// It is the connection's peer (remoteAddr), unless that peer is a trusted
// proxy: then X-Forwarded-For (all of its headers, in order) is read from
// the right, skipping trusted proxies, and the first address that is not
// one is the client. Everything left of it was written by the client and is
// ignored, so a client cannot choose its own address by sending the header.
// When every hop is trusted, the leftmost is the client.
func ClientIP(remoteAddr string, forwardedFor []string, trusted []netip.Prefix) (netip.Addr, bool) {
	host := remoteAddr
	if h, _, err := net.SplitHostPort(remoteAddr); err == nil {
		host = h
	}
	peerAddr, ok := ParseAddr(host)
	if !ok {
		return netip.Addr{}, false
	}
	if !trustedAddr(peerAddr, trusted) {
		return peerAddr, true
	}
	var hops []string
	for _, h := range forwardedFor {
		hops = append(hops, strings.Split(h, ",")...)
	}
	client := peerAddr
	for i := len(hops) - 1; i >= 0; i-- {
		a, ok := ParseAddr(hops[i])
		if !ok {
			// A trusted proxy writes a valid address, so this hop came from
			// the client; the last trusted hop is as far as we can see.
			break
		}
		client = a
		if !trustedAddr(a, trusted) {
			break
		}
	}
	return client, true
}

// Key returns the counter key of a client address: the address itself for
// IPv4, its /64 network for IPv6, because one IPv6 host usually holds a
// whole /64 and could otherwise pick a fresh address per request.
func Key(a netip.Addr) string {
	a = a.Unmap()
	if a.Is6() {
		p, _ := a.Prefix(64)
		return p.String()
	}
	return a.String()
}

// FromIncoming returns the client address of a gRPC server call: the one
// the gateway forwarded, else the gRPC peer (a caller on the internal
// network, not behind the gateway).
func FromIncoming(ctx context.Context) (netip.Addr, bool) {
	if md, ok := metadata.FromIncomingContext(ctx); ok {
		if v := md.Get(MetadataKey); len(v) == 1 {
			if a, ok := ParseAddr(v[0]); ok {
				return a, true
			}
		}
	}
	if p, ok := peer.FromContext(ctx); ok && p.Addr != nil {
		return ClientIP(p.Addr.String(), nil, nil)
	}
	return netip.Addr{}, false
}
