package console

import (
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/almoner/almoner/pkg/scopes"
)

type keysData struct {
	Keys    []apiKey
	Catalog []scopes.Scope
	Created *apiKey
	Form    keyForm
}

type keyForm struct {
	Name    string
	Scopes  map[string]bool
	Expires string
}

// confirmData is the confirmation step of a destructive action: a page of
// its own with one button, which works without script and with a keyboard.
type confirmData struct {
	Question, Detail, Action, Button, Cancel string
}

func (c *Console) keyRoutes() {
	m := c.mux
	m.HandleFunc("GET "+Prefix+"/t/{tid}/keys", c.keysPage)
	m.HandleFunc("POST "+Prefix+"/t/{tid}/keys", c.keysCreate)
	m.HandleFunc("GET "+Prefix+"/t/{tid}/keys/{kid}/revoke", c.keyRevokeConfirm)
	m.HandleFunc("POST "+Prefix+"/t/{tid}/keys/{kid}/revoke", c.keyRevoke)
}

// keysList reads the tenant's keys into a page; false when refused (the
// refusal is answered).
func (c *Console) keysList(w http.ResponseWriter, r *http.Request, p *page) (*keysData, bool) {
	res := c.get(r, tenantPath(p.Tenant.ID, "/api-keys"))
	d := &keysData{Catalog: scopes.Catalog, Form: keyForm{Scopes: map[string]bool{}}}
	if !res.ok() || res.decode(&d.Keys) != nil {
		c.refused(w, r, p, res)
		return nil, false
	}
	return d, true
}

func (c *Console) keysPage(w http.ResponseWriter, r *http.Request) {
	p, ok := c.tenantPage(w, r, "keys")
	if !ok {
		return
	}
	p.Title = "API keys"
	if p.Data, ok = c.keysList(w, r, p); ok {
		c.render(w, r, http.StatusOK, "keys", p)
	}
}

// keysCreate makes a key (POST …/api-keys) and shows it this once.
func (c *Console) keysCreate(w http.ResponseWriter, r *http.Request) {
	p, ok := c.tenantPage(w, r, "keys")
	if !ok {
		return
	}
	p.Title = "API keys"
	_ = r.ParseForm()
	form := keyForm{Name: strings.TrimSpace(r.PostForm.Get("name")), Scopes: map[string]bool{}, Expires: r.PostForm.Get("expires")}
	var chosen []string
	for _, s := range r.PostForm["scope"] {
		if scopes.Known(s) {
			chosen = append(chosen, s)
			form.Scopes[s] = true
		}
	}
	body := map[string]any{"name": form.Name, "scopes": chosen}
	if form.Expires != "" {
		day, err := time.Parse(time.DateOnly, form.Expires)
		if err != nil {
			p.Error = "The expiry must be a date."
		}
		// The key works through the whole chosen day, in UTC.
		body["expiresAt"] = day.Add(24*time.Hour - time.Second).UTC().Format(time.RFC3339)
	}
	status := http.StatusOK
	var created apiKey
	if p.Error == "" {
		res := c.send(r, http.MethodPost, tenantPath(p.Tenant.ID, "/api-keys"), body)
		if res.ok() && res.decode(&created) == nil {
			form = keyForm{Scopes: map[string]bool{}}
		} else {
			p.Error, status = res.message(), statusOf(res)
		}
	}
	d, ok := c.keysList(w, r, p)
	if !ok {
		return
	}
	d.Form = form
	if created.PlainTextKey != "" {
		d.Created = &created
	}
	p.Data = d
	c.render(w, r, status, "keys", p)
}

func (c *Console) keyRevokeConfirm(w http.ResponseWriter, r *http.Request) {
	p, ok := c.tenantPage(w, r, "keys")
	if !ok {
		return
	}
	d, ok := c.keysList(w, r, p)
	if !ok {
		return
	}
	kid := r.PathValue("kid")
	for _, k := range d.Keys {
		if k.ID == kid {
			p.Title = "Revoke an API key"
			p.Data = confirmData{Question: "Revoke the key “" + k.Name + "” (" + k.KeyPrefix + ")?",
				Detail: "Programs using it stop working at once. This cannot be undone.",
				Action: consolePath(p.Tenant.ID, "/keys/"+url.PathEscape(kid)+"/revoke"), Button: "Revoke the key",
				Cancel: consolePath(p.Tenant.ID, "/keys")}
			c.render(w, r, http.StatusOK, "confirm", p)
			return
		}
	}
	p.Title, p.Data = "Not found", "There is no such key."
	c.render(w, r, http.StatusNotFound, "message", p)
}

// keyRevoke revokes: DELETE …/api-keys/{id}.
func (c *Console) keyRevoke(w http.ResponseWriter, r *http.Request) {
	p, ok := c.tenantPage(w, r, "keys")
	if !ok {
		return
	}
	res := c.send(r, http.MethodDelete, tenantPath(p.Tenant.ID, "/api-keys/"+url.PathEscape(r.PathValue("kid"))), nil)
	if !res.ok() {
		p.Title = "API keys"
		d, ok := c.keysList(w, r, p)
		if !ok {
			return
		}
		p.Data, p.Error = d, res.message()
		c.render(w, r, statusOf(res), "keys", p)
		return
	}
	redirect(w, r, consolePath(p.Tenant.ID, "/keys"), "key-revoked")
}
