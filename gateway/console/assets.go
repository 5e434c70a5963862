package console

import (
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"io/fs"
	"net/http"
	"path"
	"strings"
)

// static holds the console's stylesheet and script, embedded in the
// binary: no build step, nothing from another origin.
//
//go:embed static
var static embed.FS

// assetSet serves the static files under names that carry a hash of their
// content (console.3f2a….css), so that they can be cached for a year: a
// changed file is a new name.
type assetSet struct {
	byName map[string]asset // hashed name → file
	urls   map[string]string
}

type asset struct {
	body        []byte
	contentType string
}

var contentTypes = map[string]string{
	".css": "text/css; charset=utf-8",
	".js":  "text/javascript; charset=utf-8",
	".svg": "image/svg+xml",
}

func newAssetSet() *assetSet {
	s := &assetSet{byName: map[string]asset{}, urls: map[string]string{}}
	entries, err := fs.ReadDir(static, "static")
	if err != nil {
		panic("console: " + err.Error())
	}
	for _, e := range entries {
		b, err := static.ReadFile("static/" + e.Name())
		if err != nil {
			panic("console: " + err.Error())
		}
		sum := sha256.Sum256(b)
		ext := path.Ext(e.Name())
		hashed := strings.TrimSuffix(e.Name(), ext) + "." + hex.EncodeToString(sum[:6]) + ext
		s.byName[hashed] = asset{body: b, contentType: contentTypes[ext]}
		s.urls[e.Name()] = Prefix + "/assets/" + hashed
	}
	return s
}

// url is the hashed URL of a static file ("console.css").
func (s *assetSet) url(name string) string {
	u, ok := s.urls[name]
	if !ok {
		panic("console: no asset " + name)
	}
	return u
}

func (s *assetSet) serve(w http.ResponseWriter, r *http.Request) {
	a, ok := s.byName[r.PathValue("name")]
	if !ok {
		http.NotFound(w, r)
		return
	}
	w.Header().Set("Content-Type", a.contentType)
	w.Header().Set("Cache-Control", "public, max-age=31536000, immutable")
	_, _ = w.Write(a.body)
}
