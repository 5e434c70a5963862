package e2e

import (
	"fmt"
	"os"
	"testing"

	"go.uber.org/goleak"

	"github.com/almoner/almoner/cmd/almoner/apptest"
	"github.com/almoner/almoner/pkg/db"
	"github.com/almoner/almoner/pkg/mail/mailtest"
)

// TestMain lets tests start Almoner child processes from this binary
// (apptest.StartChild), and after the whole run checks that no API key or
// webhook secret any test saw was ever written to any log. Transactions
// are tracked: a payment processor call made inside one fails the request
// that made it (db.OutsideTx). Once the shared mail server is stopped, a
// goroutine still running (a cluster, client or stream a test did not
// stop) fails the run: no goroutine is ignored, as every cluster is
// stopped with its test.
func TestMain(m *testing.M) {
	apptest.RunChildIfRequested()
	db.TrackTransactions()
	code := m.Run()
	apptest.StopPooler()
	mailtest.StopShared()
	if err := goleak.Find(); code == 0 && err != nil {
		fmt.Fprintf(os.Stderr, "goleak: %v\n", err)
		code = 1
	}
	if leaks := apptest.SecretsNeverLogged(); leaks != "" {
		fmt.Fprint(os.Stderr, "FAIL: secrets in logs:\n"+leaks)
		code = 1
	}
	os.Exit(code)
}
