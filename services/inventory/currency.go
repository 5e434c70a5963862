package inventory

import (
	"context"
	"time"

	"github.com/almoner/almoner/pkg/apperr"
	"github.com/almoner/almoner/pkg/ttlcache"
)

// currencyCache remembers tenants' default currencies for a short while,
// so that creating items does not cost a call to the auth service each.
type currencyCache struct {
	*ttlcache.Cache[string]
}

func newCurrencyCache(lookup CurrencyLookup, ttl time.Duration) *currencyCache {
	return &currencyCache{ttlcache.New(ttl, lookup)}
}

// Get returns tenantID's default currency. A failed lookup is a 503: the
// caller may retry, or name the currency.
func (c *currencyCache) Get(ctx context.Context, tenantID string) (string, error) {
	code, err := c.Cache.Get(ctx, tenantID)
	if err != nil {
		return "", apperr.Unavailable("The tenant's default currency could not be read.", err)
	}
	return code, nil
}
