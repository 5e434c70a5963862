package console

import (
	"net/http"
	"net/url"
	"sync"
	"time"

	"github.com/google/uuid"
)

// tenantView is the tenant a page is about, with the pages the signed-in
// user (or the impersonated one) may open there.
type tenantView struct {
	ID   string
	Name string
	Role string
	Nav  []navItem
}

// navItem is one tenant page. It is shown when the page's list route does
// not answer 403: the API, not the console, decides what a role may see,
// so custom roles are right without the console knowing their scopes.
type navItem struct {
	Key, Label, Path, Probe string
	Current                 bool
}

// tenantPages are the per-tenant pages and the route each is probed with.
var tenantPages = []navItem{
	// The dashboard (donations:view) is probed with the first order of
	// the orders list (donations:view or orders:view, which every
	// built-in role holds together), not with itself: computing the
	// period's numbers on every page would cost a dashboard per click.
	// A custom role with orders:view alone sees the link and the page's
	// refusal.
	{Key: "dashboard", Label: "Dashboard", Path: "/dashboard", Probe: "/orders?pageSize=1"},
	{Key: "keys", Label: "API keys", Path: "/keys", Probe: "/api-keys"},
	{Key: "webhooks", Label: "Webhooks", Path: "/webhooks", Probe: "/webhooks"},
	{Key: "users", Label: "Users", Path: "/users", Probe: "/users"},
}

// banner is what every page shows while an operator impersonates.
type banner struct {
	ID, TenantID, TenantName, UserID, UserLabel, Reason string
	ExpiresAt                                           time.Time
	MinutesLeft                                         int
}

func (c *Console) tenantRoutes() {
	m := c.mux
	m.HandleFunc("GET "+Prefix+"/t/{tid}", c.tenantHome)
	m.HandleFunc("GET "+Prefix+"/t/{tid}/{$}", c.tenantHome)
	c.dashboardRoutes()
	c.keyRoutes()
	c.webhookRoutes()
	c.userRoutes()
}

// tenantPath is the API path of a tenant route.
func tenantPath(tid, rest string) string { return "/api/tenants/" + url.PathEscape(tid) + rest }

// consolePath is the console path of a tenant page.
func consolePath(tid, rest string) string { return Prefix + "/t/" + url.PathEscape(tid) + rest }

// tenantPage prepares a tenant page: the session, the banner, the tenant
// (a membership, or the impersonation's tenant) and the nav. It answers
// the request itself and returns false when the page cannot be shown.
func (c *Console) tenantPage(w http.ResponseWriter, r *http.Request, current string) (*page, bool) {
	s, ok := c.session(w, r)
	if !ok {
		return nil, false
	}
	p := &page{Session: s, Banner: c.banner(r, s), Flash: flash(r)}
	tid := r.PathValue("tid")
	if _, err := uuid.Parse(tid); err != nil {
		c.render(w, r, http.StatusNotFound, "message", &page{Session: s, Title: "Not found", Data: "There is no such tenant."})
		return nil, false
	}
	tv := &tenantView{ID: tid}
	for _, m := range s.Memberships {
		if m.TenantID == tid {
			tv.Name, tv.Role = m.TenantName, m.Role
		}
	}
	if p.Banner != nil && p.Banner.TenantID == tid {
		tv.Name, tv.Role = p.Banner.TenantName, "impersonated"
	}
	if tv.Name == "" {
		p.Title = "Not found"
		p.Data = "There is no such tenant, or you are not a member of it."
		c.render(w, r, http.StatusNotFound, "message", p)
		return nil, false
	}
	tv.Nav = c.nav(r, tid, current)
	p.Tenant = tv
	return p, true
}

// nav probes every tenant page's list route at once.
func (c *Console) nav(r *http.Request, tid, current string) []navItem {
	allowed := make([]bool, len(tenantPages))
	var wg sync.WaitGroup
	for i, it := range tenantPages {
		wg.Go(func() {
			allowed[i] = c.get(r, tenantPath(tid, it.Probe)).Status != http.StatusForbidden
		})
	}
	wg.Wait()
	var out []navItem
	for i, it := range tenantPages {
		if allowed[i] {
			it.Path = consolePath(tid, it.Path)
			it.Current = it.Key == current
			out = append(out, it)
		}
	}
	return out
}

// banner reads an operator's impersonation in force, with the tenant's
// name and the user's email where the API shows them; nil for everyone
// else.
func (c *Console) banner(r *http.Request, s *signedIn) *banner {
	if s.PlatformRole == "" {
		return nil
	}
	res := c.get(r, "/api/admin/impersonations/current")
	var imp impersonation
	if !res.ok() || res.decode(&imp) != nil {
		return nil
	}
	b := &banner{ID: imp.ID, TenantID: imp.TenantID, TenantName: imp.TenantID, UserID: imp.UserID, UserLabel: imp.UserID,
		Reason: imp.Reason, ExpiresAt: imp.ExpiresAt}
	b.MinutesLeft = max(0, int(imp.ExpiresAt.Sub(c.now()).Round(time.Minute)/time.Minute))
	var t tenant
	if res := c.get(r, "/api/admin/tenants/"+url.PathEscape(imp.TenantID)); res.ok() && res.decode(&t) == nil {
		b.TenantName = t.Name
	}
	var users []user
	if res := c.get(r, tenantPath(imp.TenantID, "/users")); res.ok() && res.decode(&users) == nil {
		for _, u := range users {
			if u.ID == imp.UserID {
				b.UserLabel = u.Email
			}
		}
	}
	return b
}

// tenantHome opens the tenant's first page the user may see.
func (c *Console) tenantHome(w http.ResponseWriter, r *http.Request) {
	p, ok := c.tenantPage(w, r, "")
	if !ok {
		return
	}
	if len(p.Tenant.Nav) == 0 {
		p.Title = p.Tenant.Name
		p.Data = "Your role opens none of the console's pages in this tenant."
		c.render(w, r, http.StatusOK, "message", p)
		return
	}
	http.Redirect(w, r, p.Tenant.Nav[0].Path, http.StatusSeeOther)
}

// pickerPage lists the user's tenants; with one, it opens it; an operator
// goes to the impersonated tenant or the admin pages.
func (c *Console) pickerPage(w http.ResponseWriter, r *http.Request) {
	s, ok := c.session(w, r)
	if !ok {
		return
	}
	b := c.banner(r, s)
	switch {
	case b != nil:
		http.Redirect(w, r, consolePath(b.TenantID, "/"), http.StatusSeeOther)
		return
	case len(s.Memberships) == 1 && s.PlatformRole == "":
		http.Redirect(w, r, consolePath(s.Memberships[0].TenantID, "/"), http.StatusSeeOther)
		return
	case len(s.Memberships) == 0 && s.PlatformRole != "":
		http.Redirect(w, r, Prefix+"/admin", http.StatusSeeOther)
		return
	}
	c.render(w, r, http.StatusOK, "picker", &page{Title: "Choose a tenant", Session: s, Flash: flash(r)})
}

// forbidden shows a tenant page the role may not open, or any refusal of
// a page's read.
func (c *Console) refused(w http.ResponseWriter, r *http.Request, p *page, res result) {
	p.Error = res.message()
	if res.Status == http.StatusForbidden {
		p.Error = "Your role cannot open this page. (" + res.message() + ")"
	}
	c.render(w, r, statusOf(res), "message", p)
}
