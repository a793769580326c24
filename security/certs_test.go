package security

import (
	"crypto/x509"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestSecurityCertsIssueAndVerify(t *testing.T) {
	dir := t.TempDir()
	caDir := filepath.Join(dir, "ca")
	if _, err := WriteCA(caDir, "test CA", 24*time.Hour, false); err != nil {
		t.Fatal(err)
	}
	ca, err := LoadCA(caDir)
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	roots.AddCert(ca.Cert)
	if !ca.Cert.IsCA || ca.Cert.Subject.CommonName != "test CA" {
		t.Errorf("CA certificate: IsCA %v, CN %q", ca.Cert.IsCA, ca.Cert.Subject.CommonName)
	}

	tests := []struct {
		opts       IssueOptions
		server     bool
		wantGroups []string
	}{
		{IssueOptions{Role: RoleJobTracker, Name: "jt", Hosts: []string{"master", "127.0.0.1"}}, true, nil},
		{IssueOptions{Role: RoleTaskTracker, Name: "t1", Hosts: []string{"localhost", "::1"}}, true, nil},
		{IssueOptions{Role: RoleUser, Name: "alice", Groups: []string{"eng", "ops"}}, false, []string{"eng", "ops"}},
	}
	out := filepath.Join(dir, "certs")
	for _, tt := range tests {
		tt.opts.Validity = time.Hour
		certPath, keyPath, err := IssueFiles(caDir, out, tt.opts, false)
		if err != nil {
			t.Fatalf("%s %s: %v", tt.opts.Role, tt.opts.Name, err)
		}
		if certPath != filepath.Join(out, tt.opts.Name+".pem") || keyPath != filepath.Join(out, tt.opts.Name+"-key.pem") {
			t.Errorf("files %s %s", certPath, keyPath)
		}
		if st, err := os.Stat(keyPath); err != nil || st.Mode().Perm() != 0o600 {
			t.Errorf("key %s: mode %v (%v), want 0600", keyPath, st.Mode().Perm(), err)
		}
		c, err := readCert(certPath)
		if err != nil {
			t.Fatal(err)
		}
		id := IdentityOf(c)
		if id.Name != tt.opts.Name || id.Role != tt.opts.Role || !slices.Equal(id.Groups, tt.wantGroups) {
			t.Errorf("identity %+v, want name %s role %s groups %v", id, tt.opts.Name, tt.opts.Role, tt.wantGroups)
		}
		// Every certificate is a client certificate of the CA.
		if _, err := c.Verify(x509.VerifyOptions{Roots: roots, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}); err != nil {
			t.Errorf("%s as a client certificate: %v", tt.opts.Name, err)
		}
		// Daemon certificates are server certificates for their hosts.
		for _, h := range tt.opts.Hosts {
			_, err := c.Verify(x509.VerifyOptions{Roots: roots, DNSName: h, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}})
			if err != nil {
				t.Errorf("%s as a server certificate for %s: %v", tt.opts.Name, h, err)
			}
		}
		_, err = c.Verify(x509.VerifyOptions{Roots: roots, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}})
		if (err == nil) != tt.server {
			t.Errorf("%s as a server certificate: %v, want server %v", tt.opts.Name, err, tt.server)
		}
		if err := c.VerifyHostname("elsewhere.example"); err == nil {
			t.Errorf("%s is valid for a host it was not issued for", tt.opts.Name)
		}
		if !c.NotAfter.Before(time.Now().Add(2 * time.Hour)) {
			t.Errorf("%s valid until %v, want about an hour", tt.opts.Name, c.NotAfter)
		}
	}

	// A certificate of another CA does not verify against this one.
	other := filepath.Join(dir, "other")
	if _, err := WriteCA(other, "other CA", time.Hour, false); err != nil {
		t.Fatal(err)
	}
	p, _, err := IssueFiles(other, other, IssueOptions{Role: RoleUser, Name: "mallory", Validity: time.Hour}, false)
	if err != nil {
		t.Fatal(err)
	}
	c, _ := readCert(p)
	if _, err := c.Verify(x509.VerifyOptions{Roots: roots, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageAny}}); err == nil {
		t.Error("a certificate of another CA verified")
	}

	// Existing files are kept unless forced; the CA's own files always.
	if _, _, err := IssueFiles(caDir, out, IssueOptions{Role: RoleUser, Name: "alice", Validity: time.Hour}, false); err == nil || !strings.Contains(err.Error(), "--force") {
		t.Errorf("issuing over an existing certificate: %v", err)
	}
	if _, _, err := IssueFiles(caDir, out, IssueOptions{Role: RoleUser, Name: "alice", Validity: time.Hour}, true); err != nil {
		t.Errorf("forced reissue: %v", err)
	}
	if _, _, err := IssueFiles(caDir, caDir, IssueOptions{Role: RoleUser, Name: "ca", Validity: time.Hour}, true); err == nil {
		t.Error("a certificate named ca was written over the CA")
	}
	if _, err := WriteCA(caDir, "again", time.Hour, false); err == nil {
		t.Error("a second CA was written over the first without --force")
	}
}

func TestSecurityCertsRefused(t *testing.T) {
	ca, err := NewCA("test CA", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range []IssueOptions{
		{Role: "admin", Name: "x"},
		{Role: RoleUser, Name: ""},
		{Role: RoleUser, Name: "al ice"},
		{Role: RoleUser, Name: "a,b"},
		{Role: RoleUser, Name: "../x"},
		{Role: RoleUser, Name: "alice", Groups: []string{"a b"}},
		{Role: RoleUser, Name: "alice", Hosts: []string{"h"}},
		{Role: RoleTaskTracker, Name: "t1"},                                             // no hosts
		{Role: RoleJobTracker, Name: "jt", Hosts: []string{"h"}, Groups: []string{"g"}}, // groups
	} {
		o.Validity = time.Hour
		if _, _, err := ca.Issue(o); err == nil {
			t.Errorf("Issue(%+v) succeeded", o)
		}
	}
}

func TestSecurityIdentityRoles(t *testing.T) {
	ca, err := NewCA("test CA", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	certPEM, _, err := ca.Issue(IssueOptions{Role: RoleTaskTracker, Name: "t1", Hosts: []string{"127.0.0.1"}, Validity: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	c := parsePEM(t, certPEM)
	if !slices.ContainsFunc(c.IPAddresses, func(ip net.IP) bool { return ip.Equal(net.ParseIP("127.0.0.1")) }) {
		t.Errorf("IP SANs %v", c.IPAddresses)
	}
	if id := IdentityOf(c); id.Role != RoleTaskTracker || id.Name != "t1" || id.Groups != nil {
		t.Errorf("identity %+v", id)
	}
	// Two roles, or none, is no role.
	c.Subject.OrganizationalUnit = []string{RoleUser, RoleTaskTracker}
	if id := IdentityOf(c); id.Role != "" {
		t.Errorf("two roles gave role %q", id.Role)
	}
	c.Subject.OrganizationalUnit = []string{"staff"}
	if id := IdentityOf(c); id.Role != "" {
		t.Errorf("no role gave role %q", id.Role)
	}
}
