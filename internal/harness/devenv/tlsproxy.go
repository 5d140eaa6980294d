package devenv

import (
	"crypto/sha1" //nolint:gosec // nginx's {SHA} password scheme; test users only
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/vectorpilot/vectorpilot/internal/pki"
)

// TLSProxy is a real nginx terminating TLS and checking HTTP basic auth in front of an
// upstream (a local OpenSearch node), with certificates from a private CA it made. It
// stands in for the OpenSearch security plugin's HTTP layer, which cannot be installed
// here: TLS with a private CA and username/password authentication.
type TLSProxy struct {
	// URL is https://HOST:PORT.
	URL string
	// Port is the port it listens on.
	Port int
	// CA is the PEM of the CA that signed the server certificate; WrongCA another CA's.
	CA, WrongCA []byte
	dir         string
	cmd         *exec.Cmd
}

// StartTLSProxy starts nginx from bin/ on a free loopback port, forwarding to upstream
// for requests that carry one of users' passwords, with a server certificate from a CA it
// makes.
func StartTLSProxy(root, upstream string, users map[string]string) (*TLSProxy, error) {
	ca, err := pki.NewCA("vectorpilot test CA", time.Hour)
	if err != nil {
		return nil, err
	}
	return StartTLSProxyWith(root, upstream, users, ca)
}

// StartTLSProxyWith is StartTLSProxy with a server certificate (for 127.0.0.1 and
// localhost) that ca signs.
func StartTLSProxyWith(root, upstream string, users map[string]string, ca *pki.CA) (*TLSProxy, error) {
	return StartTLSProxyAt(root, "127.0.0.1", []string{"127.0.0.1", "localhost"}, upstream, users, ca)
}

// StartTLSProxyAt is StartTLSProxyWith listening on host (an address of this machine: the
// loopback, or a link the harness made) with a server certificate for names.
func StartTLSProxyAt(root, host string, names []string, upstream string, users map[string]string, ca *pki.CA) (*TLSProxy, error) {
	bin := filepath.Join(root, "bin", "nginx")
	if _, err := os.Stat(bin); err != nil {
		return nil, fmt.Errorf("nginx missing at %s: run hack/install-nginx.sh (make test does): %w", bin, err)
	}
	dir, err := os.MkdirTemp("", "vectorpilot-tls-*")
	if err != nil {
		return nil, err
	}
	p := &TLSProxy{dir: dir}
	ok := false
	defer func() {
		if !ok {
			_ = p.Stop()
		}
	}()
	wrong, err := pki.NewCA("some other CA", time.Hour)
	if err != nil {
		return nil, err
	}
	p.CA, p.WrongCA = ca.CertPEM, wrong.CertPEM
	server, err := ca.Issue("opensearch", names, time.Hour)
	if err != nil {
		return nil, err
	}
	port, err := FreePort(host)
	if err != nil {
		return nil, err
	}
	address := net.JoinHostPort(host, strconv.Itoa(port))
	files := map[string][]byte{"server.crt": server.CertPEM, "server.key": server.KeyPEM, "nginx.conf": []byte(nginxConfig(dir, address, upstream))}
	for name, data := range files {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o600); err != nil {
			return nil, err
		}
	}
	if err := p.SetUsers(users); err != nil {
		return nil, err
	}
	p.cmd = exec.Command(bin, "-p", dir, "-c", filepath.Join(dir, "nginx.conf"), "-e", filepath.Join(dir, "error.log"))
	// Its own process group, so Stop ends the master and its workers together.
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := p.cmd.Start(); err != nil {
		return nil, err
	}
	p.URL, p.Port = "https://"+address, port
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		conn, err := tls.Dial("tcp", address, &tls.Config{RootCAs: pool(p.CA), ServerName: names[0]})
		if err == nil {
			conn.Close()
			break
		}
		if time.Now().After(deadline) {
			log, _ := os.ReadFile(filepath.Join(dir, "error.log"))
			return nil, fmt.Errorf("nginx did not answer TLS on %s: %v\n%s", address, err, log)
		}
	}
	ok = true
	return p, nil
}

// SetUsers replaces the users nginx accepts. nginx reads the file on every request, so a
// change (a rotated password) holds from the next request on, as a real cluster's would.
func (p *TLSProxy) SetUsers(users map[string]string) error {
	names := make([]string, 0, len(users))
	for u := range users {
		names = append(names, u)
	}
	sort.Strings(names)
	var b strings.Builder
	for _, u := range names {
		sum := sha1.Sum([]byte(users[u])) //nolint:gosec // nginx's {SHA} scheme
		fmt.Fprintf(&b, "%s:{SHA}%s\n", u, base64.StdEncoding.EncodeToString(sum[:]))
	}
	tmp := filepath.Join(p.dir, "users.tmp")
	if err := os.WriteFile(tmp, []byte(b.String()), 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, filepath.Join(p.dir, "users"))
}

// Stop ends nginx by its process group and removes its files.
func (p *TLSProxy) Stop() error {
	if p.cmd != nil && p.cmd.Process != nil {
		_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGTERM)
		_, _ = p.cmd.Process.Wait()
	}
	return os.RemoveAll(p.dir)
}

func nginxConfig(dir, address, upstream string) string {
	return fmt.Sprintf(`daemon off;
master_process on;
worker_processes 1;
pid %[1]s/nginx.pid;
user root;
events { worker_connections 256; }
http {
  access_log off;
  client_body_temp_path %[1]s/body;
  proxy_temp_path %[1]s/proxy;
  fastcgi_temp_path %[1]s/fastcgi;
  uwsgi_temp_path %[1]s/uwsgi;
  scgi_temp_path %[1]s/scgi;
  client_max_body_size 200m;
  server {
    listen %[2]s ssl;
    ssl_certificate %[1]s/server.crt;
    ssl_certificate_key %[1]s/server.key;
    ssl_protocols TLSv1.2 TLSv1.3;
    auth_basic "opensearch";
    auth_basic_user_file %[1]s/users;
    location / {
      proxy_pass %[3]s;
      proxy_set_header Authorization "";
      proxy_http_version 1.1;
      proxy_set_header Connection "";
    }
  }
}
`, dir, address, upstream)
}

// FreePort is a TCP port free on address now.
func FreePort(address string) (int, error) {
	l, err := net.Listen("tcp", net.JoinHostPort(address, "0"))
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

func pool(pemCerts []byte) *x509.CertPool {
	p := x509.NewCertPool()
	p.AppendCertsFromPEM(pemCerts)
	return p
}
