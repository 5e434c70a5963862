// Package migrations embeds the imports schema's forward-only migrations.
package migrations

import (
	"embed"
	"io/fs"

	"github.com/almoner/almoner/pkg/db"
)

//go:embed *.sql
var files embed.FS

// Set returns the imports schema's migrations.
func Set() db.Migrations {
	var f fs.FS = files
	return db.Migrations{Schema: "imports", FS: f}
}
