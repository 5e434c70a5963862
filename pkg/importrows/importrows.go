// Package importrows is the one reading of ALMONER_IMPORT_ROWS_RETENTION,
// the setting three services share: the contacts and orders services keep
// the outcome of each imported row that long (their import_rows) and
// prune it after, and the imports service resumes an import only while
// those rows are surely kept, since they are what makes a batch sent
// again safe (docs/imports.md, Housekeeping). Every process running any
// of the three must be given the same value. Prune is the pruning both
// services run on their own table.
package importrows

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/almoner/almoner/pkg/config"
	"github.com/almoner/almoner/pkg/db"
)

// Setting is the environment variable of the retention.
const Setting = "ALMONER_IMPORT_ROWS_RETENTION"

const (
	// DefaultRetention is thirty days.
	DefaultRetention = 30 * 24 * time.Hour
	// MinRetention is a day. An import resumes only within the retention
	// (less the imports service's margin), so it must be well over the
	// longest an import runs: a million rows take minutes, but a service
	// down for hours holds an import back, and an operator should have a
	// working day to bring it back before the import fails for good.
	MinRetention = 24 * time.Hour
	// MaxRetention is a year. Nothing but a resume reads the rows, so a
	// longer one only grows the tables; the bound also catches a unit
	// typed wrong (720000h for 720h).
	MaxRetention = 365 * 24 * time.Hour
)

// Retention reads the setting from c within its bounds (DefaultRetention
// when unset); a value out of bounds is an error naming the setting.
func Retention(c config.Source) (time.Duration, error) {
	d, err := c.Duration(Setting, DefaultRetention)
	if err != nil {
		return 0, err
	}
	if d < MinRetention || d > MaxRetention {
		return 0, fmt.Errorf("%s=%s: must be between %s and %s (docs/imports.md, Housekeeping)", Setting, d, MinRetention, MaxRetention)
	}
	return d, nil
}

// PruneChunk is the most rows one statement of Prune deletes: a statement
// holds its row locks and its WAL until it commits, so a chunk keeps each
// one short (tens of milliseconds) however many rows are due.
const PruneChunk = 10_000

// Prune deletes the rows of table (a service's import rows, "schema.table",
// with a created_at column) of every tenant older than keep, chunk rows a
// statement (PruneChunk when chunk <= 0), until none is left or ctx ends.
// It returns how many it deleted: those of the statements that committed,
// also when it returns an error. The imports service refuses to resume an
// import that started longer than keep ago, so no batch is sent again for
// a row pruned here.
func Prune(ctx context.Context, q db.Execer, table string, keep time.Duration, chunk int) (int64, error) {
	if chunk <= 0 {
		chunk = PruneChunk
	}
	schema, name, _ := strings.Cut(table, ".")
	t := pgx.Identifier{schema, name}.Sanitize()
	// By ctid: the rows the BRIN scan found, deleted without a second
	// lookup through the primary key. Replicas pruning at once both pick
	// some of the same rows; the second waits for the first and passes
	// over what it deleted.
	total, err := db.ExecBatches(ctx, q, `DELETE FROM `+t+` WHERE ctid = ANY (ARRAY(
		SELECT ctid FROM `+t+` WHERE created_at < now() - make_interval(secs => $1) LIMIT $2))`, chunk, keep.Seconds())
	if err != nil {
		return total, fmt.Errorf("prune %s: %w", table, err)
	}
	return total, nil
}
