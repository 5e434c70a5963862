// Package importrows is the one reading of ALMONER_IMPORT_ROWS_RETENTION,
// the setting three services share: the contacts and orders services keep
// the outcome of each imported row that long (their import_rows) and
// prune it after, and the imports service resumes an import only while
// those rows are surely kept, since they are what makes a batch sent
// again safe (docs/imports.md, Housekeeping). Every process running any
// of the three must be given the same value.
package importrows

import (
	"fmt"
	"time"

	"github.com/almoner/almoner/pkg/config"
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
