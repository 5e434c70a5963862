package e2e

import (
	"net/http"
	"testing"

	"github.com/almoner/almoner/cmd/almoner/apptest"
)

// TestThroughPgBouncer holds `make test-pgbouncer` to its word: the
// cluster's services reach PostgreSQL through PgBouncer in transaction
// mode (its SHOW STATS counts their transactions), not around it.
func TestThroughPgBouncer(t *testing.T) {
	if !apptest.PoolerOn() {
		t.Skip("runs under make test-pgbouncer (" + apptest.PoolerVar + "=1)")
	}
	t.Parallel()
	c := apptest.Start(t, apptest.Options{})
	tn := c.NewTenant(t)
	c.Do(t, "POST", tPath(tn.ID, "/contacts"), tn.Key, map[string]any{"contactType": "Individual", "firstName": "Pooled", "lastName": "Donor"}).
		Expect(t, http.StatusCreated)
	if n := c.PoolerTransactions(t); n == 0 {
		t.Fatal("PgBouncer passed no transaction of the cluster's database")
	}
}
