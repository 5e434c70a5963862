package inventory

import (
	"context"
	"sync"
	"time"

	"github.com/almoner/almoner/pkg/apperr"
)

// currencyCache remembers tenants' default currencies for a short while,
// so that creating items does not cost a call to the auth service each.
type currencyCache struct {
	lookup CurrencyLookup
	ttl    time.Duration
	now    func() time.Time

	mu sync.Mutex
	m  map[string]cachedCurrency
}

type cachedCurrency struct {
	code    string
	expires time.Time
}

func newCurrencyCache(lookup CurrencyLookup, ttl time.Duration) *currencyCache {
	return &currencyCache{lookup: lookup, ttl: ttl, now: time.Now, m: map[string]cachedCurrency{}}
}

// Get returns tenantID's default currency. A failed lookup is a 503: the
// caller may retry, or name the currency.
func (c *currencyCache) Get(ctx context.Context, tenantID string) (string, error) {
	now := c.now()
	c.mu.Lock()
	e, ok := c.m[tenantID]
	c.mu.Unlock()
	if ok && now.Before(e.expires) {
		return e.code, nil
	}
	code, err := c.lookup(ctx, tenantID)
	if err != nil {
		return "", apperr.Unavailable("The tenant's default currency could not be read.", err)
	}
	c.mu.Lock()
	// Expired entries of other tenants go when the map is swept on growth;
	// tenants number in the thousands at most, so this stays small.
	if len(c.m) >= 10000 {
		for k, v := range c.m {
			if !now.Before(v.expires) {
				delete(c.m, k)
			}
		}
	}
	c.m[tenantID] = cachedCurrency{code: code, expires: now.Add(c.ttl)}
	c.mu.Unlock()
	return code, nil
}
