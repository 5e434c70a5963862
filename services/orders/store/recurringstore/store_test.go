package recurringstore_test

import (
	"testing"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/almoner/almoner/services/orders/store/recurringstore"
	"github.com/almoner/almoner/services/orders/store/storetest"
)

const actor = "api-key:ak_test_store"

// newStore is a recurring store on a fresh database with a tenant and its
// fund (storetest.New).
func newStore(t *testing.T) (*recurringstore.Store, *pgxpool.Pool, uuid.UUID, uuid.UUID) {
	t.Helper()
	core, pool, tenant, fund := storetest.New(t)
	return recurringstore.New(core), pool, tenant, fund
}

// gift is storetest's.
var gift = storetest.Gift
