package gateway

import (
	"context"
	"net/http/httptest"
	"testing"
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
