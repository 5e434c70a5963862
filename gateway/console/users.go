package console

import (
	"net/http"
	"net/url"
	"strings"
	"time"
)

type usersData struct {
	Users          []user
	Roles          []role
	Impersonations []impersonation
	// HistoryRefused is why the impersonation history is not shown.
	HistoryRefused string
	DefaultUntil   string
}

func (c *Console) userRoutes() {
	m := c.mux
	base := Prefix + "/t/{tid}/users"
	m.HandleFunc("GET "+base, c.usersPage)
	m.HandleFunc("POST "+base, c.usersInvite)
	m.HandleFunc("POST "+base+"/{uid}/role", c.userRole)
	m.HandleFunc("GET "+base+"/{uid}/deactivate", c.userDeactivateConfirm)
	m.HandleFunc("POST "+base+"/{uid}/deactivate", c.userDeactivate)
	m.HandleFunc("POST "+Prefix+"/t/{tid}/support-access", c.supportGrant)
	m.HandleFunc("POST "+Prefix+"/t/{tid}/support-access/withdraw", c.supportWithdraw)
}

// usersList reads the members, the roles and the impersonation history.
func (c *Console) usersList(w http.ResponseWriter, r *http.Request, p *page) (*usersData, bool) {
	d := &usersData{DefaultUntil: c.now().Add(7 * 24 * time.Hour).UTC().Format("2006-01-02T15:04")}
	res := c.get(r, tenantPath(p.Tenant.ID, "/users"))
	if !res.ok() || res.decode(&d.Users) != nil {
		c.refused(w, r, p, res)
		return nil, false
	}
	if res := c.get(r, tenantPath(p.Tenant.ID, "/roles")); res.ok() {
		_ = res.decode(&d.Roles)
	}
	var env envelope[impersonation]
	if res := c.get(r, tenantPath(p.Tenant.ID, "/impersonations?pageSize=50")); res.ok() && res.decode(&env) == nil {
		d.Impersonations = env.Items
	} else {
		d.HistoryRefused = res.message()
	}
	return d, true
}

func (c *Console) usersPage(w http.ResponseWriter, r *http.Request) {
	p, ok := c.tenantPage(w, r, "users")
	if !ok {
		return
	}
	p.Title = "Users"
	if p.Data, ok = c.usersList(w, r, p); ok {
		c.render(w, r, http.StatusOK, "users", p)
	}
}

// usersAction runs one change and shows the users page: a redirect with
// a confirmation on success, the page with the refusal otherwise.
func (c *Console) usersAction(w http.ResponseWriter, r *http.Request, method, apiPath string, body any, done string) {
	p, ok := c.tenantPage(w, r, "users")
	if !ok {
		return
	}
	res := c.send(r, method, tenantPath(p.Tenant.ID, apiPath), body)
	if res.ok() {
		redirect(w, r, consolePath(p.Tenant.ID, "/users"), done)
		return
	}
	p.Title, p.Error = "Users", res.message()
	if p.Data, ok = c.usersList(w, r, p); ok {
		c.render(w, r, statusOf(res), "users", p)
	}
}

// usersInvite invites a member: POST …/users (the invitation email goes
// out from the auth service).
func (c *Console) usersInvite(w http.ResponseWriter, r *http.Request) {
	body := map[string]string{"email": strings.TrimSpace(r.PostFormValue("email")), "role": r.PostFormValue("role"),
		"firstName": strings.TrimSpace(r.PostFormValue("firstName")), "lastName": strings.TrimSpace(r.PostFormValue("lastName"))}
	c.usersAction(w, r, http.MethodPost, "/users", body, "invited")
}

func (c *Console) userRole(w http.ResponseWriter, r *http.Request) {
	c.usersAction(w, r, http.MethodPut, "/users/"+url.PathEscape(r.PathValue("uid")),
		map[string]string{"role": r.PostFormValue("role")}, "role-changed")
}

func (c *Console) userDeactivateConfirm(w http.ResponseWriter, r *http.Request) {
	p, ok := c.tenantPage(w, r, "users")
	if !ok {
		return
	}
	d, ok := c.usersList(w, r, p)
	if !ok {
		return
	}
	uid := r.PathValue("uid")
	for _, u := range d.Users {
		if u.ID == uid {
			p.Title = "Deactivate a user"
			p.Data = confirmData{Question: "Deactivate " + u.Email + "?",
				Detail: "They can no longer work in " + p.Tenant.Name + ", from their next request on.",
				Action: consolePath(p.Tenant.ID, "/users/"+url.PathEscape(uid)+"/deactivate"), Button: "Deactivate",
				Cancel: consolePath(p.Tenant.ID, "/users")}
			c.render(w, r, http.StatusOK, "confirm", p)
			return
		}
	}
	p.Title, p.Data = "Not found", "There is no such user."
	c.render(w, r, http.StatusNotFound, "message", p)
}

func (c *Console) userDeactivate(w http.ResponseWriter, r *http.Request) {
	c.usersAction(w, r, http.MethodDelete, "/users/"+url.PathEscape(r.PathValue("uid")), nil, "deactivated")
}

// supportGrant grants platform support access until a time (PUT
// …/support-access); the form's local time is read as UTC, which the page
// says.
func (c *Console) supportGrant(w http.ResponseWriter, r *http.Request) {
	body := map[string]string{}
	if t, err := time.Parse("2006-01-02T15:04", r.PostFormValue("until")); err == nil {
		body["until"] = t.UTC().Format(time.RFC3339)
	}
	c.usersAction(w, r, http.MethodPut, "/support-access", body, "access-granted")
}

func (c *Console) supportWithdraw(w http.ResponseWriter, r *http.Request) {
	c.usersAction(w, r, http.MethodDelete, "/support-access", nil, "access-withdrawn")
}
