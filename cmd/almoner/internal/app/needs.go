package app

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/almoner/almoner/pkg/db"
	"github.com/almoner/almoner/pkg/service"
	"github.com/almoner/almoner/services/contacts"
	"github.com/almoner/almoner/services/inventory"
	"github.com/almoner/almoner/services/orders"
	"github.com/almoner/almoner/services/reports"
)

// Needs declares, as Loki's module manager declares its dependencies, the
// services whose schemas a service reads: reports reads the report_*_v1
// views that contacts, inventory and orders publish in their migrations.
// A needed service is not started nor migrated by the process that needs
// it: its schema must be migrated already (`almoner migrate`, or the
// owner started first), and start-up checks that it is (checkNeeds).
// Where one process migrates both, the needed schema goes first.
var Needs = map[string][]string{
	reports.Name: {contacts.Name, inventory.Name, orders.Name},
}

// Services lists every service by name, each after the services it needs,
// in name order otherwise: the order in which they are migrated and
// started.
func Services() []string {
	names := make([]string, 0, len(Modules))
	for n := range Modules {
		names = append(names, n)
	}
	sort.Strings(names)
	var out []string
	var visit func(string)
	visit = func(n string) {
		if slices.Contains(out, n) {
			return
		}
		// The table has no cycle (TestNeedsAreKnownServices); a service is
		// appended once all it needs are.
		for _, dep := range Needs[n] {
			visit(dep)
		}
		out = append(out, n)
	}
	for _, n := range names {
		visit(n)
	}
	return out
}

// ownSchema is the migration set of the schema a service owns, named
// after it; the views it publishes are there.
func ownSchema(name string) (db.Migrations, error) {
	for _, s := range Modules[name].Migrations() {
		if s.Schema == name {
			return s, nil
		}
	}
	return db.Migrations{}, fmt.Errorf("service %s has no schema named after it", name)
}

// latestVersion is the highest goose version of set: the number before
// the first "_" of each *.sql file, as goose reads it.
func latestVersion(set db.Migrations) (int64, error) {
	files, err := fs.Glob(set.FS, "*.sql")
	if err != nil {
		return 0, fmt.Errorf("migrations of %s: %w", set.Schema, err)
	}
	var latest int64
	for _, f := range files {
		num, _, _ := strings.Cut(f, "_")
		v, err := strconv.ParseInt(num, 10, 64)
		if err != nil {
			return 0, fmt.Errorf("migration %s of %s: %w", f, set.Schema, err)
		}
		latest = max(latest, v)
	}
	return latest, nil
}

// schemaVersion is the highest migration applied to schema according to
// its goose version table, 0 when there is none. It only reads: a check
// must not create the table that goose would.
func schemaVersion(ctx context.Context, conn *pgx.Conn, schema string) (int64, error) {
	table := pgx.Identifier{schema, "goose_db_version"}.Sanitize()
	var exists bool
	if err := conn.QueryRow(ctx, "SELECT to_regclass($1) IS NOT NULL", table).Scan(&exists); err != nil {
		return 0, fmt.Errorf("look for %s: %w", table, err)
	}
	if !exists {
		return 0, nil
	}
	var v int64
	if err := conn.QueryRow(ctx, "SELECT coalesce(max(version_id), 0) FROM "+table+" WHERE is_applied").Scan(&v); err != nil {
		return 0, fmt.Errorf("read %s: %w", table, err)
	}
	return v, nil
}

// unmigrated names a needed schema that is behind what this binary knows.
type unmigrated struct {
	service, needs string
	want, have     int64
}

func (u unmigrated) Error() string {
	has := "has none of it"
	if u.have > 0 {
		has = fmt.Sprintf("has it at migration %d", u.have)
	}
	return fmt.Sprintf("%s needs the %s schema (migration %d; the database %s): run `almoner migrate` or start %s first",
		u.service, u.needs, u.want, has, u.needs)
}

// checkNeeds fails, naming every schema that is missing, unless the
// schemas the hosted modules need are migrated up to the latest migration
// this binary holds. A schema this process migrates itself (a hosted
// owner, with migrate) is not checked: StartHost migrates it first.
func checkNeeds(ctx context.Context, settings db.Settings, migrate bool, mods []service.Module) error {
	hosted := func(n string) bool {
		return slices.ContainsFunc(mods, func(m service.Module) bool { return m.Name == n })
	}
	var pairs [][2]string
	for _, m := range mods {
		for _, n := range Needs[m.Name] {
			if !(migrate && hosted(n)) {
				pairs = append(pairs, [2]string{m.Name, n})
			}
		}
	}
	if len(pairs) == 0 {
		return nil
	}
	// A pool URL (pool_max_conns, …) is parsed as db.Migrate parses it,
	// and a transaction-mode pooler's connection prepares nothing.
	conn, err := settings.Connect(ctx)
	if err != nil {
		return fmt.Errorf("connect to check the schemas the services need: %w", err)
	}
	defer conn.Close(context.WithoutCancel(ctx))
	var errs []error
	for _, p := range pairs {
		set, err := ownSchema(p[1])
		if err != nil {
			return err
		}
		want, err := latestVersion(set)
		if err != nil {
			return err
		}
		have, err := schemaVersion(ctx, conn, set.Schema)
		if err != nil {
			return fmt.Errorf("check the %s schema %s needs: %w", set.Schema, p[0], err)
		}
		if have < want {
			errs = append(errs, unmigrated{service: p[0], needs: set.Schema, want: want, have: have})
		}
	}
	return errors.Join(errs...)
}
