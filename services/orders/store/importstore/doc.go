// Package importstore is the SQL of gift imports: rows staged and checked
// in chunks, each recorded once under its import (orders.import_rows), and
// the old import rows pruned.
package importstore
