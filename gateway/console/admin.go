package console

import (
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/almoner/almoner/pkg/features"
)

type adminData struct {
	Query    string
	Tenants  []tenant
	Total    int
	Features []struct{ Name, Description string }
	Current  *impersonation
	Write    bool
}

type adminTenantData struct {
	Tenant   tenant
	Features []featureRow
	Current  *impersonation
	Write    bool
}

type featureRow struct {
	Name, Description string
	On                bool
}

func (c *Console) adminRoutes() {
	m := c.mux
	base := Prefix + "/admin"
	m.HandleFunc("GET "+base, c.adminPage)
	m.HandleFunc("POST "+base+"/tenants", c.adminCreateTenant)
	m.HandleFunc("GET "+base+"/tenants/{id}", c.adminTenantPage)
	m.HandleFunc("POST "+base+"/tenants/{id}/features", c.adminFeatures)
	m.HandleFunc("POST "+base+"/impersonations", c.adminImpersonate)
	m.HandleFunc("POST "+base+"/impersonations/{id}/end", c.adminEndImpersonation)
}

// operatorPage prepares an operator's page: a member without a platform
// role sees the refusal in words.
func (c *Console) operatorPage(w http.ResponseWriter, r *http.Request, title string) (*page, bool) {
	s, ok := c.session(w, r)
	if !ok {
		return nil, false
	}
	p := &page{Title: title, Session: s, Flash: flash(r)}
	if s.PlatformRole == "" {
		p.Error = "These pages are for platform operators."
		c.render(w, r, http.StatusForbidden, "message", p)
		return nil, false
	}
	p.Banner = c.banner(r, s)
	return p, true
}

// current is the operator's impersonation in force, from the banner.
func current(p *page) *impersonation {
	if p.Banner == nil {
		return nil
	}
	return &impersonation{ID: p.Banner.ID, TenantID: p.Banner.TenantID, UserID: p.Banner.UserID, Reason: p.Banner.Reason,
		ExpiresAt: p.Banner.ExpiresAt}
}

// adminList reads the tenants matching the search (GET /api/admin/tenants).
func (c *Console) adminList(w http.ResponseWriter, r *http.Request, p *page) (*adminData, bool) {
	d := &adminData{Query: strings.TrimSpace(r.FormValue("q")), Features: features.Catalog, Current: current(p),
		Write: p.Session.PlatformRole == "platform-admin"}
	q := url.Values{"pageSize": {"50"}}
	if d.Query != "" {
		q.Set("q", d.Query)
	}
	var env envelope[tenant]
	res := c.get(r, "/api/admin/tenants?"+q.Encode())
	if !res.ok() || res.decode(&env) != nil {
		c.refused(w, r, p, res)
		return nil, false
	}
	d.Tenants, d.Total = env.Items, env.TotalCount
	return d, true
}

func (c *Console) adminPage(w http.ResponseWriter, r *http.Request) {
	p, ok := c.operatorPage(w, r, "Tenants")
	if !ok {
		return
	}
	if p.Data, ok = c.adminList(w, r, p); ok {
		c.render(w, r, http.StatusOK, "admin", p)
	}
}

// adminCreateTenant creates a tenant (POST /api/admin/tenants,
// platform-admin).
func (c *Console) adminCreateTenant(w http.ResponseWriter, r *http.Request) {
	p, ok := c.operatorPage(w, r, "Tenants")
	if !ok {
		return
	}
	_ = r.ParseForm()
	feats := slices.DeleteFunc(slices.Clone(r.PostForm["feature"]), func(f string) bool { return !features.Known(f) })
	body := map[string]any{"name": strings.TrimSpace(r.PostForm.Get("name")), "slug": strings.TrimSpace(r.PostForm.Get("slug")), "features": feats}
	res := c.send(r, http.MethodPost, "/api/admin/tenants", body)
	var t tenant
	if res.ok() && res.decode(&t) == nil {
		redirect(w, r, Prefix+"/admin/tenants/"+url.PathEscape(t.ID), "tenant-created")
		return
	}
	p.Error = res.message()
	if p.Data, ok = c.adminList(w, r, p); ok {
		c.render(w, r, statusOf(res), "admin", p)
	}
}

// adminTenant reads one tenant (GET /api/admin/tenants/{id}).
func (c *Console) adminTenant(w http.ResponseWriter, r *http.Request, p *page) (*adminTenantData, bool) {
	d := &adminTenantData{Current: current(p), Write: p.Session.PlatformRole == "platform-admin"}
	res := c.get(r, "/api/admin/tenants/"+url.PathEscape(r.PathValue("id")))
	if !res.ok() || res.decode(&d.Tenant) != nil {
		c.refused(w, r, p, res)
		return nil, false
	}
	for _, f := range features.Catalog {
		d.Features = append(d.Features, featureRow{Name: f.Name, Description: f.Description, On: slices.Contains(d.Tenant.Features, f.Name)})
	}
	p.Title = "Tenant " + d.Tenant.Name
	return d, true
}

func (c *Console) adminTenantPage(w http.ResponseWriter, r *http.Request) {
	p, ok := c.operatorPage(w, r, "Tenant")
	if !ok {
		return
	}
	if p.Data, ok = c.adminTenant(w, r, p); ok {
		c.render(w, r, http.StatusOK, "admintenant", p)
	}
}

// adminFeatures switches the tenant's features (PUT …/features), every
// flag of the catalog at once: a box left unticked turns its flag off.
func (c *Console) adminFeatures(w http.ResponseWriter, r *http.Request) {
	p, ok := c.operatorPage(w, r, "Tenant")
	if !ok {
		return
	}
	_ = r.ParseForm()
	set := map[string]bool{}
	for _, f := range features.Catalog {
		set[f.Name] = slices.Contains(r.PostForm["feature"], f.Name)
	}
	id := r.PathValue("id")
	res := c.send(r, http.MethodPut, "/api/admin/tenants/"+url.PathEscape(id)+"/features", map[string]any{"features": set})
	if res.ok() {
		redirect(w, r, Prefix+"/admin/tenants/"+url.PathEscape(id), "features-saved")
		return
	}
	p.Error = res.message()
	if p.Data, ok = c.adminTenant(w, r, p); ok {
		c.render(w, r, statusOf(res), "admintenant", p)
	}
}

// adminImpersonate starts an impersonation (POST /api/admin/impersonations)
// and opens the tenant as the user.
func (c *Console) adminImpersonate(w http.ResponseWriter, r *http.Request) {
	p, ok := c.operatorPage(w, r, "Tenant")
	if !ok {
		return
	}
	tid := r.PostFormValue("tenantId")
	minutes, _ := strconv.Atoi(r.PostFormValue("minutes"))
	body := map[string]any{"tenantId": tid, "userId": strings.TrimSpace(r.PostFormValue("userId")),
		"reason": strings.TrimSpace(r.PostFormValue("reason"))}
	if minutes > 0 {
		body["minutes"] = minutes
	}
	res := c.send(r, http.MethodPost, "/api/admin/impersonations", body)
	if res.ok() {
		http.Redirect(w, r, consolePath(tid, "/"), http.StatusSeeOther)
		return
	}
	p.Error = res.message()
	r.SetPathValue("id", tid)
	if p.Data, ok = c.adminTenant(w, r, p); ok {
		c.render(w, r, statusOf(res), "admintenant", p)
	}
}

// adminEndImpersonation ends it (DELETE /api/admin/impersonations/{id}):
// the banner's button, on every page.
func (c *Console) adminEndImpersonation(w http.ResponseWriter, r *http.Request) {
	res := c.send(r, http.MethodDelete, "/api/admin/impersonations/"+url.PathEscape(r.PathValue("id")), nil)
	if !res.ok() && res.Status != http.StatusNotFound {
		c.render(w, r, statusOf(res), "message", &page{Title: "Impersonation", Error: res.message()})
		return
	}
	redirect(w, r, Prefix+"/admin", "imp-ended")
}
