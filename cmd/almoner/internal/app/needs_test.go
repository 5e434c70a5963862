package app

import (
	"context"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/almoner/almoner/pkg/authctx"
	"github.com/almoner/almoner/pkg/config"
	"github.com/almoner/almoner/pkg/db"
	"github.com/almoner/almoner/pkg/testdb"
)

// TestNeedsAreKnownServices: every service Needs names is in Modules with
// a schema named after it, and Services and AllMigrations put it before
// the service that needs it.
func TestNeedsAreKnownServices(t *testing.T) {
	order := Services()
	if len(order) != len(Modules) {
		t.Fatalf("Services() = %v, want each of the %d modules once", order, len(Modules))
	}
	var schemas []string
	for _, s := range AllMigrations() {
		schemas = append(schemas, s.Schema)
	}
	for svc, needs := range Needs {
		if _, ok := Modules[svc]; !ok {
			t.Errorf("Needs names %s, which is not in Modules", svc)
		}
		for _, n := range needs {
			if _, err := ownSchema(n); err != nil {
				t.Errorf("%s needs %s: %v", svc, n, err)
			}
			if slices.Index(order, n) > slices.Index(order, svc) {
				t.Errorf("Services() = %v: %s before %s, which it needs", order, svc, n)
			}
			if slices.Index(schemas, n) > slices.Index(schemas, svc) {
				t.Errorf("AllMigrations migrates %v: %s before %s, which it needs", schemas, svc, n)
			}
		}
	}
}

// TestResolveOrdersByNeeds: a list of targets is started (and migrated)
// with what a service needs first, whatever order it names them in.
func TestResolveOrdersByNeeds(t *testing.T) {
	mods, _, err := resolve([]string{"reports,orders"})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, m := range mods {
		got = append(got, m.Name)
	}
	if want := []string{"orders", "reports"}; !slices.Equal(got, want) {
		t.Errorf("resolve(reports,orders) = %v, want %v", got, want)
	}
}

// TestReportsAloneChecksWhatItNeeds starts reports alone, migrating at
// start-up: against a database where orders is not migrated (then only
// partly) it refuses, saying what to do, and migrates nothing, orders'
// schema least of all; once orders is migrated it starts.
func TestReportsAloneChecksWhatItNeeds(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	orders, err := ownSchema("orders")
	if err != nil {
		t.Fatal(err)
	}
	latest, err := latestVersion(orders)
	if err != nil {
		t.Fatal(err)
	}
	url := testdb.New(t, append(Modules["contacts"].Migrations(), Modules["inventory"].Migrations()...)...)
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)

	_, err = startReports(ctx, url)
	want := fmt.Sprintf("reports needs the orders schema (migration %d; the database has none of it): run `almoner migrate` or start orders first", latest)
	if err == nil || err.Error() != want {
		t.Fatalf("reports alone on a database without orders: err %v, want %q", err, want)
	}
	for _, schema := range []string{"orders", "reports"} {
		var exists bool
		if err := conn.QueryRow(ctx, "SELECT to_regnamespace($1) IS NOT NULL", schema).Scan(&exists); err != nil {
			t.Fatal(err)
		}
		if exists {
			t.Errorf("the refused start made the %s schema", schema)
		}
	}

	// Orders migrated up to its second migration only: still refused,
	// with where the database stands.
	if err := db.Migrate(ctx, url, db.Migrations{Schema: orders.Schema, FS: firstMigrations(t, orders.FS, 2)}); err != nil {
		t.Fatal(err)
	}
	_, err = startReports(ctx, url)
	if want := "(migration " + fmt.Sprint(latest) + "; the database has it at migration 2)"; err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("reports alone on orders at migration 2: err %v, want one saying %q", err, want)
	}

	if err := db.Migrate(ctx, url, Modules["orders"].Migrations()...); err != nil {
		t.Fatal(err)
	}
	a, err := startReports(ctx, url)
	if err != nil {
		t.Fatalf("reports alone once orders is migrated: %v", err)
	}
	stop, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := a.Stop(stop); err != nil {
		t.Errorf("stop: %v", err)
	}
}

// startReports starts reports alone on url, migrating at start-up as a
// process does by default (ALMONER_MIGRATE).
func startReports(ctx context.Context, url string) (*App, error) {
	return Start(ctx, Config{
		Targets: []string{"reports"}, DatabaseURL: url, GRPCAddr: "127.0.0.1:0", MetricsAddr: "off",
		Environment: "sandbox", Migrate: true, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
		ServiceConfig: config.Overlay(map[string]string{authctx.KeyVar: authctx.NewKeyHex()}, nil),
	})
}

// firstMigrations is the first n migrations of a set's files.
func firstMigrations(t *testing.T, fsys fs.FS, n int) fs.FS {
	t.Helper()
	files, err := fs.Glob(fsys, "*.sql")
	if err != nil || len(files) < n {
		t.Fatalf("migrations %v: %v", files, err)
	}
	out := fstest.MapFS{}
	for _, f := range files[:n] {
		b, err := fs.ReadFile(fsys, f)
		if err != nil {
			t.Fatal(err)
		}
		out[f] = &fstest.MapFile{Data: b}
	}
	return out
}
