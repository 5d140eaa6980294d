package devenv

import (
	"crypto/tls"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/vectorpilot/vectorpilot/internal/harness/testgate"
)

// TestTLSProxyTerminatesTLSAndChecksPasswords: the harness's nginx trusts only its CA's
// certificate, refuses a wrong or missing password, and takes a rotated password at once.
func TestTLSProxyTerminatesTLSAndChecksPasswords(t *testing.T) {
	testgate.Integration(t, "nginx")
	root, err := RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	upstream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "" {
			http.Error(w, "credentials leaked upstream", http.StatusBadRequest)
			return
		}
		_, _ = io.WriteString(w, "upstream")
	}))
	defer upstream.Close()
	p, err := StartTLSProxy(root, upstream.URL, map[string]string{"operator": "first"})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = p.Stop() }()
	get := func(ca []byte, user, password string) (int, error) {
		c := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool(ca)}}}
		req, _ := http.NewRequest(http.MethodGet, p.URL+"/", nil)
		if user != "" {
			req.SetBasicAuth(user, password)
		}
		resp, err := c.Do(req)
		if err != nil {
			return 0, err
		}
		resp.Body.Close()
		return resp.StatusCode, nil
	}
	if code, err := get(p.CA, "operator", "first"); err != nil || code != 200 {
		t.Errorf("right CA and password: %d %v", code, err)
	}
	if code, err := get(p.CA, "operator", "wrong"); err != nil || code != 401 {
		t.Errorf("wrong password: %d %v", code, err)
	}
	if code, err := get(p.CA, "", ""); err != nil || code != 401 {
		t.Errorf("no password: %d %v", code, err)
	}
	if _, err := get(p.WrongCA, "operator", "first"); err == nil {
		t.Error("a client trusting another CA connected")
	}
	if err := p.SetUsers(map[string]string{"operator": "second"}); err != nil {
		t.Fatal(err)
	}
	if code, err := get(p.CA, "operator", "second"); err != nil || code != 200 {
		t.Errorf("rotated password: %d %v", code, err)
	}
	if code, _ := get(p.CA, "operator", "first"); code != 401 {
		t.Errorf("the old password still works after rotation: %d", code)
	}
}
