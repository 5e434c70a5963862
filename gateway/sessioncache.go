package gateway

import (
	"context"
	"crypto/sha256"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	authv1 "github.com/almoner/almoner/pkg/api/almoner/auth/v1"
	"github.com/almoner/almoner/pkg/telemetry"
)

// Staff sessions are cached by the key cache's rule (keycache.go): an
// entry answers only under a live lease and is dropped when the epoch
// moves; every change that ends a session or changes a member's access
// moves the epoch and waits out the window before it is answered.

// sessionEntryLife bounds a cached session validation: a session's last
// use (its idle timeout) is written by the validations that reach the
// auth service, at most once a minute (services/auth touchEvery), so an
// active session must reach it about that often.
const sessionEntryLife = time.Minute

type cachedSession struct {
	resp  *authv1.ValidateSessionResponse
	until time.Time
}

var sessionValidations = prometheus.NewCounterVec(prometheus.CounterOpts{
	Name: "almoner_gateway_session_validations_total",
	Help: "Staff session validations by the gateway: answered from its cache (cached) or by the auth service (validated).",
}, []string{"result"})

var (
	sessionsCached    = sessionValidations.WithLabelValues("cached")
	sessionsValidated = sessionValidations.WithLabelValues("validated")
)

func init() { telemetry.Register(sessionValidations) }

// sessionKey is the cache key of a session cookie for a tenant ("" for
// the /api/auth routes).
func sessionKey(token, tenant string) [sha256.Size]byte {
	return sha256.Sum256([]byte(tenant + "\x00" + token))
}

// ValidateSession answers from the cache when it may, and otherwise calls
// ValidateSession and remembers a success.
func (c *keyCache) ValidateSession(ctx context.Context, token, tenant string) (*authv1.ValidateSessionResponse, error) {
	return c.validateSession(ctx, sessionKey(token, tenant), &authv1.ValidateSessionRequest{Token: token, TenantId: tenant})
}

// adminTenant stands for the /api/admin routes in a session's cache key:
// no tenant id in a path can hold a slash.
const adminTenant = "/admin"

// ValidateOperatorSession is ValidateSession for an /api/admin route: the
// session must be a platform operator's who has a second factor on.
func (c *keyCache) ValidateOperatorSession(ctx context.Context, token string) (*authv1.ValidateSessionResponse, error) {
	return c.validateSession(ctx, sessionKey(token, adminTenant), &authv1.ValidateSessionRequest{Token: token, Admin: true})
}

func (c *keyCache) validateSession(ctx context.Context, h [sha256.Size]byte, req *authv1.ValidateSessionRequest) (*authv1.ValidateSessionResponse, error) {
	now := c.now()
	c.mu.RLock()
	e, ok := c.sessions[h]
	ok = ok && now.Before(c.lease) && now.Before(e.until)
	gen := c.gen
	c.mu.RUnlock()
	if ok {
		sessionsCached.Inc()
		return e.resp, nil
	}
	sessionsValidated.Inc()
	resp, err := c.client.ValidateSession(ctx, req)
	if err != nil {
		return nil, err
	}
	c.rememberSession(h, gen, resp)
	return resp, nil
}

// rememberSession stores a validation made while the cache was at
// generation gen, for at most sessionEntryLife and never past the
// session's end (less a window, for the clocks).
func (c *keyCache) rememberSession(h [sha256.Size]byte, gen uint64, resp *authv1.ValidateSessionResponse) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.gen != gen || c.window <= 0 {
		return
	}
	now := c.now()
	until := now.Add(sessionEntryLife)
	if exp := resp.GetExpiresAt(); exp != nil && exp.AsTime().Add(-c.window).Before(until) {
		until = exp.AsTime().Add(-c.window)
	}
	if !now.Before(until) {
		return
	}
	if _, ok := c.sessions[h]; !ok && len(c.sessions) >= c.maxEntries {
		for k := range c.sessions { // evict an arbitrary entry
			delete(c.sessions, k)
			break
		}
	}
	c.sessions[h] = cachedSession{resp: resp, until: until}
}
