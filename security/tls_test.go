package security

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"gomr/conf"
)

func parsePEM(t *testing.T, b []byte) *x509.Certificate {
	t.Helper()
	block, _ := pem.Decode(b)
	if block == nil {
		t.Fatal("no PEM block")
	}
	c, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// testPKI is a CA in a temporary directory with certificates issued on
// demand.
type testPKI struct {
	t   *testing.T
	dir string
}

func newTestPKI(t *testing.T) *testPKI {
	t.Helper()
	p := &testPKI{t: t, dir: t.TempDir()}
	if _, err := WriteCA(p.dir, "test CA", time.Hour, false); err != nil {
		t.Fatal(err)
	}
	return p
}

// conf issues a certificate and returns a configuration using it.
func (p *testPKI) conf(o IssueOptions) *conf.Config {
	p.t.Helper()
	o.Validity = time.Hour
	cert, key, err := IssueFiles(p.dir, p.dir, o, true)
	if err != nil {
		p.t.Fatal(err)
	}
	return p.confFiles(filepath.Join(p.dir, CACertFile), cert, key)
}

func (p *testPKI) confFiles(ca, cert, key string) *conf.Config {
	p.t.Helper()
	c, err := conf.Default().With(map[string]string{KeyTLSEnabled: "true", KeyTLSCA: ca, KeyTLSCert: cert, KeyTLSKey: key}, "test")
	if err != nil {
		p.t.Fatal(err)
	}
	return c
}

func (p *testPKI) load(o IssueOptions) *TLS {
	p.t.Helper()
	s, err := Load(p.conf(o))
	if err != nil {
		p.t.Fatal(err)
	}
	return s
}

func TestTLSLoad(t *testing.T) {
	if s, err := Load(conf.Default()); s != nil || err != nil {
		t.Fatalf("TLS off: Load = %v, %v; want nil, nil", s, err)
	}
	p := newTestPKI(t)
	s := p.load(IssueOptions{Role: RoleUser, Name: "alice", Groups: []string{"eng"}})
	if id := s.Identity(); id.Name != "alice" || id.Role != RoleUser || len(id.Groups) != 1 {
		t.Errorf("identity %+v", id)
	}
	ca := filepath.Join(p.dir, CACertFile)
	alice, aliceKey := filepath.Join(p.dir, "alice.pem"), filepath.Join(p.dir, "alice-key.pem")
	p.conf(IssueOptions{Role: RoleUser, Name: "bob"})
	other := t.TempDir()
	if _, err := WriteCA(other, "other CA", time.Hour, false); err != nil {
		t.Fatal(err)
	}
	noRole := filepath.Join(t.TempDir(), "norole.pem")
	{
		c, _ := LoadCA(p.dir)
		certPEM, keyPEM, _ := c.Issue(IssueOptions{Role: RoleUser, Name: "x", Validity: time.Hour})
		// Rewrite the OU by reissuing from a template copy.
		tmpl := parsePEM(t, certPEM)
		tmpl.Subject.OrganizationalUnit = []string{"staff"}
		tmpl.RawSubject = nil
		block, _ := pem.Decode(keyPEM)
		k, _ := x509.ParsePKCS8PrivateKey(block.Bytes)
		der, err := x509.CreateCertificate(nil, tmpl, c.Cert, tmpl.PublicKey, c.Key)
		if err != nil {
			t.Fatal(err)
		}
		os.WriteFile(noRole, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o644)
		kb, _ := x509.MarshalPKCS8PrivateKey(k)
		os.WriteFile(noRole+".key", pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: kb}), 0o600)
	}
	for _, tt := range []struct {
		name, ca, cert, key, want string
	}{
		{"no CA", "", alice, aliceKey, KeyTLSCA + " is empty"},
		{"no cert", ca, "", aliceKey, KeyTLSCert + " is empty"},
		{"no key", ca, alice, "", KeyTLSKey + " is empty"},
		{"missing CA file", ca + ".missing", alice, aliceKey, KeyTLSCA},
		{"key of another certificate", ca, alice, filepath.Join(p.dir, "bob-key.pem"), "private key does not match"},
		{"another CA", filepath.Join(other, CACertFile), alice, aliceKey, "not a valid client certificate of the cluster CA"},
		{"no role", ca, noRole, noRole + ".key", "carries no gomr role"},
	} {
		_, err := Load(p.confFiles(tt.ca, tt.cert, tt.key))
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: Load error %v, want one containing %q", tt.name, err, tt.want)
		}
	}
}

// serve runs an HTTP server of the cluster (TLS as s, handler h) and
// returns its address.
func serve(t *testing.T, s *TLS, h http.Handler) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 5 * time.Second, ErrorLog: log.New(io.Discard, "", 0)}
	go srv.Serve(s.Listener(l))
	t.Cleanup(func() { srv.Close() })
	return l.Addr().String()
}

func get(t *testing.T, rt http.RoundTripper, url string) (int, string, error) {
	t.Helper()
	c := &http.Client{Transport: rt, Timeout: 10 * time.Second}
	resp, err := c.Get(url)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), nil
}

func TestTLSHTTPRequireRole(t *testing.T) {
	p := newTestPKI(t)
	t1 := p.load(IssueOptions{Role: RoleTaskTracker, Name: "t1", Hosts: []string{"127.0.0.1"}})
	t2 := p.load(IssueOptions{Role: RoleTaskTracker, Name: "t2", Hosts: []string{"127.0.0.1"}})
	alice := p.load(IssueOptions{Role: RoleUser, Name: "alice"})
	addr := serve(t, t1, RequireRole(RoleTaskTracker, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id, _ := PeerIdentity(r.TLS)
		fmt.Fprintf(w, "hello %s", id)
	})))
	url := "http://" + addr + "/mapOutput"

	// Another tracker (as a reduce child does): an http:// URL goes over TLS.
	code, body, err := get(t, t2.Transport(nil), url)
	if err != nil || code != 200 || body != "hello tasktracker t2" {
		t.Errorf("tracker t2: %d %q %v", code, body, err)
	}
	// A user certificate: the handshake passes, the role does not.
	code, body, err = get(t, alice.Transport(nil), url)
	if err != nil || code != http.StatusForbidden || !strings.Contains(body, "user alice") {
		t.Errorf("user alice: %d %q %v; want 403 naming her", code, body, err)
	}
	// Plain HTTP.
	code, body, err = get(t, &http.Transport{}, url)
	if err == nil && code < 400 {
		t.Errorf("plain HTTP: %d %q, want a refusal", code, body)
	}
	// TLS without a client certificate.
	noCert := &http.Transport{TLSClientConfig: &tls.Config{RootCAs: t2.pool}}
	if code, body, err = get(t, noCert, "https://"+addr+"/mapOutput"); err == nil {
		t.Errorf("TLS without a client certificate: %d %q, want a failed handshake", code, body)
	}
	// A client certificate of another CA.
	q := newTestPKI(t)
	stranger := q.load(IssueOptions{Role: RoleTaskTracker, Name: "t1", Hosts: []string{"127.0.0.1"}})
	strangerTr := &http.Transport{TLSClientConfig: stranger.Client(RoleTaskTracker)}
	strangerTr.TLSClientConfig.RootCAs = t2.pool // it trusts the server, the server does not trust it
	if code, body, err = get(t, strangerTr, "https://"+addr+"/mapOutput"); err == nil {
		t.Errorf("client certificate of another CA: %d %q, want a failed handshake", code, body)
	}
	// A server of the wrong role: a tracker's fetcher does not talk to
	// a JobTracker's certificate as if it were a tracker.
	jt := p.load(IssueOptions{Role: RoleJobTracker, Name: "jt", Hosts: []string{"127.0.0.1"}})
	jtAddr := serve(t, jt, http.NotFoundHandler())
	if _, _, err = get(t, t2.Transport(nil), "http://"+jtAddr+"/"); err == nil || !strings.Contains(err.Error(), "not of a tasktracker") {
		t.Errorf("server of the wrong role: %v", err)
	}
}

func TestTLSHTTPRequireAnyRole(t *testing.T) {
	p := newTestPKI(t)
	t1 := p.load(IssueOptions{Role: RoleTaskTracker, Name: "t1", Hosts: []string{"127.0.0.1"}})
	t2 := p.load(IssueOptions{Role: RoleTaskTracker, Name: "t2", Hosts: []string{"127.0.0.1"}})
	jt := p.load(IssueOptions{Role: RoleJobTracker, Name: "jt", Hosts: []string{"127.0.0.1"}})
	alice := p.load(IssueOptions{Role: RoleUser, Name: "alice"})
	addr := serve(t, t1, RequireAnyRole(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, "ok")
	}), RoleJobTracker, RoleTaskTracker))
	url := "http://" + addr + "/metrics"
	for _, c := range []*TLS{t2, jt} {
		if code, body, err := get(t, c.Transport(nil), url); err != nil || code != 200 || body != "ok" {
			t.Errorf("%s: %d %q %v", c.Identity(), code, body, err)
		}
	}
	code, body, err := get(t, alice.Transport(nil), url)
	if err != nil || code != http.StatusForbidden || !strings.Contains(body, "user alice") ||
		!strings.Contains(body, "needs a jobtracker or tasktracker certificate") {
		t.Errorf("user alice: %d %q %v; want 403 naming her and the roles", code, body, err)
	}
}

func TestTLSChildConf(t *testing.T) {
	if m := ChildConf(nil); m[KeyTLSEnabled] != "false" || m[KeyTLSCert] != "" {
		t.Errorf("ChildConf(nil) = %v", m)
	}
	p := newTestPKI(t)
	t1 := p.load(IssueOptions{Role: RoleTaskTracker, Name: "t1", Hosts: []string{"127.0.0.1"}})
	m := ChildConf(t1)
	for _, k := range []string{KeyTLSCA, KeyTLSCert, KeyTLSKey} {
		if !filepath.IsAbs(m[k]) {
			t.Errorf("%s = %q, want an absolute path", k, m[k])
		}
	}
	cfg, err := conf.Default().With(m, "test")
	if err != nil {
		t.Fatal(err)
	}
	addr := serve(t, t1, RequireRole(RoleTaskTracker, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {})))
	rt, err := ClusterTransport(cfg, &http.Transport{})
	if err != nil {
		t.Fatal(err)
	}
	if code, _, err := get(t, rt, "http://"+addr+"/"); err != nil || code != 200 {
		t.Errorf("child transport: %d %v", code, err)
	}
	plain := &http.Transport{}
	if rt, err := ClusterTransport(conf.Default(), plain); err != nil || rt != plain {
		t.Errorf("TLS off: ClusterTransport = %v, %v; want the transport unchanged", rt, err)
	}
}
