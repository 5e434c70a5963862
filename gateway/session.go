package gateway

import (
	"context"
	"net/http"
	"strings"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/almoner/almoner/pkg/authctx"
	"github.com/almoner/almoner/pkg/problem"
)

// Staff sessions: a browser's cookie, resolved by the auth service (or the
// key cache's leased answers, sessioncache.go) into the same signed
// principal a key gives. docs/auth.md.

// sessionCookie is the staff session cookie's name (the auth service sets it).
const sessionCookie = "almoner_session"

// deviceCookie names the trusted-device cookie a second factor's
// rememberDevice sets; deviceMetadata is the key under which its value
// reaches the auth service (services/auth/mfa).
const (
	deviceCookieName = "almoner_device"
	deviceMetadata   = "almoner-device"
)

// impersonationHeader names, on every response to an impersonated
// request, the impersonation (docs/operators.md).
const impersonationHeader = "X-Almoner-Impersonation"

// authPrefix starts the staff sign-in routes.
const authPrefix = "/api/auth"

// crossOrigin refuses a state-changing request that a browser marks
// cross-site (Sec-Fetch-Site, else an Origin other than the host): a
// cookie is sent with those, a key never is.
var crossOrigin = http.NewCrossOriginProtection()

// sessionToken returns the request's session cookie, or "".
func sessionToken(r *http.Request) string {
	c, err := r.Cookie(sessionCookie)
	if err != nil {
		return ""
	}
	return c.Value
}

// deviceCookie forwards the trusted-device cookie on /api/auth routes, so
// that a sign-in from a trusted browser skips the second factor. Cookies
// reach no other route: the session cookie is resolved here, not sent on.
func deviceCookie(_ context.Context, r *http.Request) metadata.MD {
	if !isAuthPath(r.URL.Path) {
		return nil
	}
	c, err := r.Cookie(deviceCookieName)
	if err != nil || c.Value == "" {
		return nil
	}
	return metadata.Pairs(deviceMetadata, c.Value)
}

// isAuthPath reports whether the path is a staff sign-in route.
func isAuthPath(p string) bool { return p == authPrefix || strings.HasPrefix(p, authPrefix+"/") }

// authenticateSession is authenticate for a tenant route called with a
// session cookie and no key: the same 401, the same 404 for a tenant
// where the user is no active member, the role's scopes.
func (g *Gateway) authenticateSession(w http.ResponseWriter, r *http.Request, token string) (*http.Request, bool) {
	if !g.sameOrigin(w, r) {
		return r, false
	}
	tid, _, _ := strings.Cut(strings.TrimPrefix(r.URL.Path, tenantsPrefix+"/"), "/")
	resp, err := g.keys.ValidateSession(r.Context(), token, tid)
	if err != nil {
		closeUnread(w, r)
		switch status.Code(err) {
		case codes.Unauthenticated:
			g.writeUnauthorized(w)
		case codes.NotFound:
			g.writeProblem(w, r, g.problems.New(problem.CategoryNotFound, http.StatusNotFound, "Not Found"))
		default:
			g.handleError(r.Context(), g.mux, codec{}, w, r, err)
		}
		return r, false
	}
	p := authctx.Principal{TenantID: resp.GetTenantId(), UserID: resp.GetUserId(), SessionID: resp.GetSessionId(),
		Scopes: resp.GetScopes(), Features: resp.GetFeatures(), Currency: resp.GetDefaultCurrency(),
		Impersonator: resp.GetImpersonatorId(), Impersonation: resp.GetImpersonationId()}
	if p.Impersonation != "" {
		// A console shows a banner while an operator works as the user.
		w.Header().Set(impersonationHeader, p.Impersonation)
	}
	return withPrincipal(r, p), true
}

// authenticateStaff prepares a request to /api/auth: an X-Api-Key is
// refused (keys are for programs, these routes are for people), a
// cross-site state-changing request is refused (a forged sign-in too),
// and a valid session cookie becomes the principal. Without one the
// request goes on: signing in needs none, and the routes that do answer
// 401 themselves.
func (g *Gateway) authenticateStaff(w http.ResponseWriter, r *http.Request) (*http.Request, bool) {
	if r.Header.Get("X-Api-Key") != "" {
		closeUnread(w, r)
		g.writeUnauthorized(w)
		return r, false
	}
	if !g.sameOrigin(w, r) {
		return r, false
	}
	token := sessionToken(r)
	if token == "" {
		return r, true
	}
	resp, err := g.keys.ValidateSession(r.Context(), token, "")
	if status.Code(err) == codes.Unauthenticated {
		return r, true
	}
	if err != nil {
		closeUnread(w, r)
		g.handleError(r.Context(), g.mux, codec{}, w, r, err)
		return r, false
	}
	return withPrincipal(r, authctx.Principal{UserID: resp.GetUserId(), SessionID: resp.GetSessionId()}), true
}

// sameOrigin answers 403 to a cross-site state-changing request and
// reports whether the request may go on.
func (g *Gateway) sameOrigin(w http.ResponseWriter, r *http.Request) bool {
	if err := crossOrigin.Check(r); err != nil {
		closeUnread(w, r)
		g.writeProblem(w, r, g.problems.New(problem.CategoryForbidden, http.StatusForbidden, "Cross-site request refused"))
		return false
	}
	return true
}

// withPrincipal returns r whose route calls assert p, as authenticate
// does for a key.
func withPrincipal(r *http.Request, p authctx.Principal) *http.Request {
	ctx := authctx.NewOutgoingContext(context.WithValue(r.Context(), principalKey{}, p), p)
	return r.WithContext(ctx)
}

// adminPrefix starts the platform operators' routes (docs/operators.md).
const adminPrefix = "/api/admin"

// isAdminPath reports whether the path is a platform operators' route.
func isAdminPath(p string) bool { return p == adminPrefix || strings.HasPrefix(p, adminPrefix+"/") }

// authenticateOperator prepares a request to /api/admin: only a platform
// operator's passed session with a second factor on goes further. A key,
// no cookie or an unusable session is the one 401; a member's session 403,
// an operator without a factor 403 Mfa.EnrollmentRequired. Nothing on
// these routes runs without an operator principal: the services would
// take a call without one for the admin command's.
func (g *Gateway) authenticateOperator(w http.ResponseWriter, r *http.Request) (*http.Request, bool) {
	token := sessionToken(r)
	if r.Header.Get("X-Api-Key") != "" || token == "" {
		closeUnread(w, r)
		g.writeUnauthorized(w)
		return r, false
	}
	if !g.sameOrigin(w, r) {
		return r, false
	}
	resp, err := g.keys.ValidateOperatorSession(r.Context(), token)
	if err != nil {
		closeUnread(w, r)
		g.handleError(r.Context(), g.mux, codec{}, w, r, err)
		return r, false
	}
	scopes := authctx.OperatorScopes(resp.GetPlatformRole())
	if scopes == nil {
		closeUnread(w, r)
		g.writeUnauthorized(w)
		return r, false
	}
	return withPrincipal(r, authctx.Principal{UserID: resp.GetUserId(), SessionID: resp.GetSessionId(), Scopes: scopes}), true
}
