package shardplan_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/almoner/almoner/cmd/almoner/internal/shardplan"
)

// statement is one SQL statement written in Go source.
type statement struct {
	// key is file:function:table, what the explained list names.
	key string
	sql string
}

var (
	sqlStart = regexp.MustCompile(`(?is)^\s*(WITH|SELECT|UPDATE|DELETE\s+FROM|INSERT\s+INTO)\b`)
	// relation is a schema-qualified name in SQL.
	relation = regexp.MustCompile(`\b(audit|contacts|imports|inventory|orders|reports|webhooks)\.([a-z_][a-z0-9_]*)\b`)
)

// TestShardCrossingStatements lists every SQL statement in the services'
// and packages' Go source that names a distributed table (or a view over
// them) and never says tenant_id: on Citus each would run on every shard.
// Each must be in shardplan.CrossShard with the reason it may; an entry
// no statement matches any more fails too, so the list stays the list.
// `go test -run TestShardCrossingStatements -v` prints it.
func TestShardCrossingStatements(t *testing.T) {
	root := filepath.Join("..", "..", "..", "..")
	var found []statement
	for _, dir := range []string{"services", "pkg"} {
		found = append(found, scanDir(t, root, filepath.Join(root, dir))...)
	}
	if len(found) == 0 {
		t.Fatal("no statement found: the scan reads nothing")
	}
	seen := map[string]bool{}
	var crossing []string
	for _, s := range found {
		if filtersTenant(s.sql) {
			continue
		}
		seen[s.key] = true
		crossing = append(crossing, s.key)
		if _, ok := shardplan.CrossShard[s.key]; !ok {
			t.Errorf("%s: names a distributed table without tenant_id (filter by tenant, or explain it in shardplan.CrossShard):\n%s", s.key, s.sql)
		}
	}
	for k := range shardplan.CrossShard {
		if !seen[k] {
			t.Errorf("shardplan.CrossShard lists %s, which no statement matches any more: remove it (and from docs/scaling.md)", k)
		}
	}
	slices.Sort(crossing)
	crossing = slices.Compact(crossing)
	t.Logf("%d statements scanned; %d cross shards:\n  %s", len(found), len(crossing), strings.Join(crossing, "\n  "))
}

var (
	whereTenant = regexp.MustCompile(`(?is)\bWHERE\b.*\btenant_id\b`)
	hasWhere    = regexp.MustCompile(`(?is)\bWHERE\b`)
	insert      = regexp.MustCompile(`(?is)^\s*INSERT\s+INTO\b`)
	// boundTenant is a tenant bound to a parameter anywhere, a join's ON
	// included.
	boundTenant = regexp.MustCompile(`\btenant_id\s*=\s*\$\d`)
)

// filtersTenant reports whether a statement stays in one tenant's shard
// by its text: tenant_id after a WHERE, or an INSERT without one that
// writes tenant_id, or tenant_id = $n anywhere. It is a reading of the text, not a parse: a subquery
// that scans every tenant inside a statement that names tenant_id after
// it passes (docs/scaling.md lists the runners' claims, which do).
func filtersTenant(sql string) bool {
	if boundTenant.MatchString(sql) {
		return true
	}
	if hasWhere.MatchString(sql) {
		return whereTenant.MatchString(sql)
	}
	return insert.MatchString(sql) && strings.Contains(sql, "tenant_id")
}

// scanDir collects the statements of the non-test Go files under dir.
func scanDir(t *testing.T, root, dir string) []statement {
	t.Helper()
	var out []statement
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if d.IsDir() && (name == "api" || name == "testdb" || name == "testpg" || name == "node_modules") {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") {
			return nil
		}
		rel, _ := filepath.Rel(root, path)
		out = append(out, scanFile(t, path, filepath.ToSlash(rel))...)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// scanFile collects a file's statements: string literals and sums of
// literals and constants (others become ?) that read like a statement
// and name a distributed relation.
func scanFile(t *testing.T, path, rel string) []statement {
	t.Helper()
	src, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	f, err := parser.ParseFile(token.NewFileSet(), path, src, 0)
	if err != nil {
		t.Fatal(err)
	}
	consts := fileConsts(f)
	var out []statement
	for _, decl := range f.Decls {
		fn, ok := decl.(*ast.FuncDecl)
		if !ok || fn.Body == nil {
			continue
		}
		ast.Inspect(fn.Body, func(n ast.Node) bool {
			e, ok := n.(ast.Expr)
			if !ok {
				return true
			}
			s, ok := fold(e, consts)
			if !ok {
				return true
			}
			if sqlStart.MatchString(s) {
				for _, rel2 := range relations(s) {
					out = append(out, statement{key: rel + ":" + funcName(fn) + ":" + rel2, sql: s})
				}
			}
			return false
		})
	}
	return out
}

// relations returns the distributed relations s names, once each.
func relations(s string) []string {
	var out []string
	for _, loc := range relation.FindAllStringIndex(s, -1) {
		m := s[loc[0]:loc[1]]
		// A function (orders.contact_lock_key(…)) or a name in a
		// string ('contacts.import-merge:') is no relation.
		if next := strings.TrimLeft(s[loc[1]:], " "); strings.HasPrefix(next, "(") || strings.HasPrefix(next, "-") {
			continue
		}
		if shardplan.RoleOf(m) == shardplan.Distributed && !slices.Contains(out, m) {
			out = append(out, m)
		}
	}
	return out
}

func funcName(fn *ast.FuncDecl) string {
	if fn.Recv != nil && len(fn.Recv.List) > 0 {
		var b strings.Builder
		recv := fn.Recv.List[0].Type
		if s, ok := recv.(*ast.StarExpr); ok {
			recv = s.X
		}
		if id, ok := recv.(*ast.Ident); ok {
			b.WriteString(id.Name + ".")
		}
		return b.String() + fn.Name.Name
	}
	return fn.Name.Name
}

// fileConsts are the file's string constants, a function's own
// included (the package's others read as ?).
func fileConsts(f *ast.File) map[string]string {
	out := map[string]string{}
	ast.Inspect(f, func(n ast.Node) bool {
		g, ok := n.(*ast.GenDecl)
		if !ok || g.Tok != token.CONST {
			return true
		}
		for _, spec := range g.Specs {
			vs := spec.(*ast.ValueSpec)
			for i, name := range vs.Names {
				if i < len(vs.Values) {
					if s, ok := fold(vs.Values[i], out); ok {
						out[name.Name] = s
					}
				}
			}
		}
		return false
	})
	return out
}

// fold evaluates a string literal or a + of literals; constants come from
// consts and anything else reads as ?. ok is false unless e holds a
// string literal somewhere.
func fold(e ast.Expr, consts map[string]string) (string, bool) {
	switch x := e.(type) {
	case *ast.BasicLit:
		if x.Kind != token.STRING {
			return "", false
		}
		s, err := strconv.Unquote(x.Value)
		return s, err == nil
	case *ast.BinaryExpr:
		if x.Op != token.ADD {
			return "", false
		}
		l, lok := fold(x.X, consts)
		r, rok := fold(x.Y, consts)
		if !lok && !rok {
			return "", false
		}
		if !lok {
			l = placeholder(x.X, consts)
		}
		if !rok {
			r = placeholder(x.Y, consts)
		}
		return l + r, true
	case *ast.ParenExpr:
		return fold(x.X, consts)
	}
	return "", false
}

func placeholder(e ast.Expr, consts map[string]string) string {
	if id, ok := e.(*ast.Ident); ok {
		if s, ok := consts[id.Name]; ok {
			return s
		}
	}
	return " ? "
}
