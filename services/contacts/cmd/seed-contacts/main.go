// Command seed-contacts bulk-loads synthetic contacts into one tenant with
// COPY, for benchmarks and load tests:
//
//	seed-contacts -database-url postgres://… -count 1000000 [-tenant <uuid>] [-migrate]
//
// It prints one JSON object: the tenant, the contact id range and the time
// it took. The contacts get no audit rows (they were not created through
// the API).
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"time"

	"github.com/google/uuid"

	"github.com/almoner/almoner/pkg/config"
	"github.com/almoner/almoner/pkg/db"
	"github.com/almoner/almoner/services/contacts"
	"github.com/almoner/almoner/services/contacts/seed"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "seed-contacts:", err)
		os.Exit(1)
	}
}

func run() error {
	// A bulk load sets session_replication_role on its COPY connections
	// (seed.copyRows): it needs the server itself, never a
	// transaction-mode pooler, so ALMONER_DIRECT_DATABASE_URL wins.
	url := flag.String("database-url", config.String(db.DirectURLVar, config.String("DATABASE_URL", "")),
		"PostgreSQL URL of the server itself (ALMONER_DIRECT_DATABASE_URL, else DATABASE_URL)")
	count := flag.Int("count", 1_000_000, "how many contacts to load")
	tenantFlag := flag.String("tenant", "", "tenant id (a new random one when empty)")
	migrate := flag.Bool("migrate", false, "apply the contacts service's migrations first")
	flag.Parse()
	if *url == "" {
		return fmt.Errorf("-database-url or DATABASE_URL is required")
	}
	tenant := uuid.New()
	if *tenantFlag != "" {
		var err error
		if tenant, err = uuid.Parse(*tenantFlag); err != nil {
			return fmt.Errorf("-tenant: %w", err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
	defer cancel()
	if *migrate {
		if err := db.Migrate(ctx, *url, contacts.Migrations()...); err != nil {
			return err
		}
	}
	pool, err := db.Open(ctx, *url)
	if err != nil {
		return err
	}
	defer pool.Close()
	res, err := seed.Seed(ctx, pool, tenant, *count)
	if err != nil {
		return err
	}
	return json.NewEncoder(os.Stdout).Encode(map[string]any{
		"tenantId": res.Tenant, "contacts": res.Contacts, "firstId": res.FirstID, "lastId": res.LastID,
		"seconds": res.Elapsed.Seconds(),
	})
}
