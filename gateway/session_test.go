package gateway

import (
	"context"
	"fmt"
	"net/http/httptest"
	"testing"

	"google.golang.org/grpc/metadata"

	"github.com/almoner/almoner/pkg/ratelimit"
	"github.com/almoner/almoner/pkg/traceid"
)

// TestDeviceCookie: the trusted-device cookie reaches the auth service on
// /api/auth routes only, and nothing is forwarded without it.
func TestDeviceCookie(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, path, cookie, want string
	}{
		{"sign-in with the cookie", "/api/auth/sign-in", "almoner_device=abc; almoner_session=s", "abc"},
		{"sign-in without it", "/api/auth/sign-in", "almoner_session=s", ""},
		{"an empty cookie", "/api/auth/sign-in", "almoner_device=", ""},
		{"a tenant route", "/api/tenants/x/contacts", "almoner_device=abc", ""},
		{"a look-alike path", "/api/authx", "almoner_device=abc", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := httptest.NewRequestWithContext(t.Context(), "POST", tc.path, nil)
			r.Header.Set("Cookie", tc.cookie)
			md := deviceCookie(context.Background(), r)
			if got := md.Get(deviceMetadata); (len(got) == 0 && tc.want != "") || (len(got) > 0 && got[0] != tc.want) || (tc.want == "" && md != nil) {
				t.Errorf("metadata %v, want %q", md, tc.want)
			}
		})
	}
}

// TestAnnotateForwardsInOneMap: the trace id, the client's address and,
// on /api/auth routes, the device cookie go to the service together.
func TestAnnotateForwardsInOneMap(t *testing.T) {
	g := testGateway()
	for _, tc := range []struct {
		path   string
		device string
	}{
		{"/api/auth/sign-in", "abc"},
		{"/api/tenants/x/contacts", ""},
	} {
		r := httptest.NewRequestWithContext(traceid.NewContext(t.Context(), "4bf92f3577b34da6a3ce929d0e0e4736"), "POST", tc.path, nil)
		r.RemoteAddr = "192.0.2.7:4711"
		r.Header.Set("Cookie", "almoner_device=abc")
		r.Header.Set("X-Forwarded-For", "198.51.100.1") // not from a trusted proxy: ignored
		md := g.annotate(r.Context(), r)
		want := metadata.Pairs(traceid.MetadataKey, "4bf92f3577b34da6a3ce929d0e0e4736", ratelimit.MetadataKey, "192.0.2.7")
		if tc.device != "" {
			want.Set(deviceMetadata, tc.device)
		}
		if fmt.Sprint(md) != fmt.Sprint(want) {
			t.Errorf("%s: %v, want %v", tc.path, md, want)
		}
	}
}
