package shardplan_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/almoner/almoner/cmd/almoner/internal/app"
	"github.com/almoner/almoner/cmd/almoner/internal/shardplan"
	"github.com/almoner/almoner/pkg/testdb"
)

// TestSchemaFitsShardPlan holds every schema to the Citus plan: each
// distributed table (every table not local by the plan) has a NOT NULL
// tenant_id, a primary key that includes it, unique indexes that include
// it (but for the listed exceptions, which must still be exceptions), and
// foreign keys only to distributed tables, through tenant_id on both
// sides; no local table refers to a distributed one.
func TestSchemaFitsShardPlan(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	conn, err := pgx.Connect(ctx, testdb.New(t, app.AllMigrations()...))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.WithoutCancel(ctx))
	tables := schemaTables(t, conn)
	var problems []string
	distributed := 0
	for name, tb := range tables {
		if shardplan.RoleOf(name) == shardplan.Local {
			continue
		}
		distributed++
		switch {
		case !tb.tenantNotNull:
			problems = append(problems, name+": no NOT NULL tenant_id (make it local in shardplan, or add one)")
		case !slices.Contains(tb.pk, "tenant_id"):
			problems = append(problems, fmt.Sprintf("%s: primary key %v lacks tenant_id", name, tb.pk))
		}
	}
	problems = append(problems, uniqueProblems(t, conn)...)
	problems = append(problems, foreignKeyProblems(t, conn)...)
	slices.Sort(problems)
	for _, p := range problems {
		t.Error(p)
	}
	if distributed < 40 {
		t.Errorf("%d distributed tables: the schema query found too few to be checking anything", distributed)
	}
}

type tableInfo struct {
	tenantNotNull bool
	pk            []string
}

// appSchemas are the schemas the migrations make.
const appSchemas = `n.nspname NOT IN ('pg_catalog', 'information_schema', 'pg_toast', 'public')`

func schemaTables(t *testing.T, conn *pgx.Conn) map[string]tableInfo {
	t.Helper()
	rows, err := conn.Query(t.Context(), `
		SELECT n.nspname || '.' || c.relname,
			coalesce((SELECT a.attnotnull FROM pg_attribute a WHERE a.attrelid = c.oid AND a.attname = 'tenant_id' AND NOT a.attisdropped), false),
			coalesce((SELECT array_agg(a.attname::text ORDER BY a.attnum) FROM pg_constraint k
				JOIN pg_attribute a ON a.attrelid = k.conrelid AND a.attnum = ANY (k.conkey)
				WHERE k.conrelid = c.oid AND k.contype = 'p'), '{}')
		FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
		WHERE c.relkind IN ('r', 'p') AND `+appSchemas)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]tableInfo{}
	for rows.Next() {
		var name string
		var ti tableInfo
		if err := rows.Scan(&name, &ti.tenantNotNull, &ti.pk); err != nil {
			t.Fatal(err)
		}
		out[name] = ti
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// uniqueProblems lists the unique indexes of distributed tables without
// tenant_id that the plan does not list, and the listed ones that no
// longer exist as such.
func uniqueProblems(t *testing.T, conn *pgx.Conn) []string {
	t.Helper()
	rows, err := conn.Query(t.Context(), `
		SELECT n.nspname || '.' || c.relname, n.nspname || '.' || i.relname, pg_get_indexdef(x.indexrelid)
		FROM pg_index x JOIN pg_class c ON c.oid = x.indrelid JOIN pg_class i ON i.oid = x.indexrelid
			JOIN pg_namespace n ON n.oid = c.relnamespace
		WHERE x.indisunique AND `+appSchemas+`
			AND NOT EXISTS (SELECT 1 FROM pg_attribute a WHERE a.attrelid = c.oid AND a.attname = 'tenant_id' AND a.attnum = ANY (x.indkey::int2[]))`)
	if err != nil {
		t.Fatal(err)
	}
	var problems []string
	seen := map[string]bool{}
	for rows.Next() {
		var table, index, def string
		if err := rows.Scan(&table, &index, &def); err != nil {
			t.Fatal(err)
		}
		if shardplan.RoleOf(table) == shardplan.Local {
			continue
		}
		seen[index] = true
		if _, ok := shardplan.UniqueWithoutTenant[index]; !ok {
			problems = append(problems, fmt.Sprintf("%s: unique index without tenant_id: %s (include tenant_id, or list it with what changes in shardplan.UniqueWithoutTenant)", table, def))
		}
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	for index := range shardplan.UniqueWithoutTenant {
		if !seen[index] {
			problems = append(problems, index+": listed in shardplan.UniqueWithoutTenant but no longer a unique index without tenant_id: remove it from the list and docs/scaling.md")
		}
	}
	return problems
}

// foreignKeyProblems lists the foreign keys that would cross shards.
func foreignKeyProblems(t *testing.T, conn *pgx.Conn) []string {
	t.Helper()
	rows, err := conn.Query(t.Context(), `
		SELECT k.conname, n.nspname || '.' || c.relname, rn.nspname || '.' || rc.relname,
			(SELECT array_agg(a.attname::text ORDER BY u.i) FROM unnest(k.conkey) WITH ORDINALITY u(n, i) JOIN pg_attribute a ON a.attrelid = k.conrelid AND a.attnum = u.n),
			(SELECT array_agg(a.attname::text ORDER BY u.i) FROM unnest(k.confkey) WITH ORDINALITY u(n, i) JOIN pg_attribute a ON a.attrelid = k.confrelid AND a.attnum = u.n)
		FROM pg_constraint k JOIN pg_class c ON c.oid = k.conrelid JOIN pg_namespace n ON n.oid = c.relnamespace
			JOIN pg_class rc ON rc.oid = k.confrelid JOIN pg_namespace rn ON rn.oid = rc.relnamespace
		WHERE k.contype = 'f'`)
	if err != nil {
		t.Fatal(err)
	}
	var problems []string
	for rows.Next() {
		var name, from, to string
		var cols, refCols []string
		if err := rows.Scan(&name, &from, &to, &cols, &refCols); err != nil {
			t.Fatal(err)
		}
		fromDist, toDist := shardplan.RoleOf(from) == shardplan.Distributed, shardplan.RoleOf(to) == shardplan.Distributed
		i := slices.Index(cols, "tenant_id")
		switch {
		case fromDist && !toDist:
			problems = append(problems, fmt.Sprintf("%s: %s refers to local table %s (Citus: only to a reference table)", name, from, to))
		case !fromDist && toDist:
			problems = append(problems, fmt.Sprintf("%s: local table %s refers to distributed %s", name, from, to))
		case fromDist && (i < 0 || refCols[i] != "tenant_id"):
			problems = append(problems, fmt.Sprintf("%s: %s (%s) → %s (%s) does not go through tenant_id on both sides",
				name, from, strings.Join(cols, ", "), to, strings.Join(refCols, ", ")))
		}
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return problems
}
