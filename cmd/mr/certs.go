package main

import (
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"

	"gomr/security"
)

// newCertsCmd is mr certs: the cluster CA and the certificates of the
// daemons and users, for mutual TLS (docs/security.md).
func newCertsCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "certs",
		Short: "Make the cluster CA and the certificates of the JobTracker, TaskTrackers and users (TLS)",
		Long: `certs makes what mapreduce.cluster.tls.enabled needs (docs/security.md):

  mr certs ca --out DIR                 a cluster CA: DIR/ca.pem and DIR/ca-key.pem
  mr certs issue --ca DIR --role jobtracker --name jt --hosts master,10.0.0.1 --out DIR
  mr certs issue --ca DIR --role tasktracker --name t1 --hosts node1,10.0.0.11 --out DIR
  mr certs issue --ca DIR --role user --name alice [--groups eng,ops] --out DIR
  mr certs show FILE...                 name, role, groups, hosts and validity of certificates

A certificate is NAME.pem with its key NAME-key.pem (mode 0600). The role is the certificate's
Subject OU, the name its CN, a user's groups its O. Daemon certificates are server certificates:
--hosts lists every name and address they are reached at. A tracker's name is the name it
registers under (mr tasktracker --name, which defaults to it).`,
	}
	cmd.AddCommand(newCertsCACmd(), newCertsIssueCmd(), newCertsShowCmd())
	return cmd
}

func newCertsCACmd() *cobra.Command {
	var out, name string
	var days int
	var force bool
	cmd := &cobra.Command{
		Use:   "ca --out DIR [--name NAME] [--days N] [--force]",
		Short: "Make a cluster CA (ECDSA P-256): DIR/ca.pem and DIR/ca-key.pem",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if out == "" {
				return fmt.Errorf("mr certs ca: --out DIR is required")
			}
			if days < 1 {
				return fmt.Errorf("--days %d: must be at least 1", days)
			}
			if _, err := security.WriteCA(out, name, time.Duration(days)*24*time.Hour, force); err != nil {
				return err
			}
			fmt.Printf("wrote %s and %s (%s, valid %d days)\n", filepath.Join(out, security.CACertFile), filepath.Join(out, security.CAKeyFile), name, days)
			fmt.Printf("%s signs certificates: keep it off the cluster's machines; every process needs %s (mapreduce.cluster.tls.ca)\n",
				security.CAKeyFile, security.CACertFile)
			return nil
		},
	}
	cmd.Flags().StringVar(&out, "out", "", "directory to write ca.pem and ca-key.pem to")
	cmd.Flags().StringVar(&name, "name", "gomr cluster CA", "the CA's name (Subject CN)")
	cmd.Flags().IntVar(&days, "days", 3650, "validity in days")
	cmd.Flags().BoolVar(&force, "force", false, "replace an existing CA (every certificate of the old one stops working)")
	return cmd
}

func newCertsIssueCmd() *cobra.Command {
	var caDir, out, role, name string
	var hosts, groups []string
	var days int
	var force bool
	cmd := &cobra.Command{
		Use:   "issue --ca DIR --role jobtracker|tasktracker|user --name NAME [--hosts H,...] [--groups G,...] [--out DIR]",
		Short: "Issue a certificate signed by the cluster CA: OUT/NAME.pem and OUT/NAME-key.pem",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if caDir == "" {
				return fmt.Errorf("mr certs issue: --ca DIR (the directory of ca.pem and ca-key.pem) is required")
			}
			if out == "" {
				out = caDir
			}
			if days < 1 {
				return fmt.Errorf("--days %d: must be at least 1", days)
			}
			certPath, keyPath, err := security.IssueFiles(caDir, out, security.IssueOptions{
				Role: role, Name: name, Hosts: hosts, Groups: groups, Validity: time.Duration(days) * 24 * time.Hour,
			}, force)
			if err != nil {
				return err
			}
			desc, err := security.Describe(certPath)
			if err != nil {
				return err
			}
			fmt.Printf("wrote %s and %s\n%s", certPath, keyPath, desc)
			abs := func(p string) string {
				if a, err := filepath.Abs(p); err == nil {
					return a
				}
				return p
			}
			fmt.Printf("use it with:\n  -D %s=true -D %s=%s -D %s=%s -D %s=%s\n",
				security.KeyTLSEnabled, security.KeyTLSCA, abs(filepath.Join(caDir, security.CACertFile)),
				security.KeyTLSCert, abs(certPath), security.KeyTLSKey, abs(keyPath))
			return nil
		},
	}
	cmd.Flags().StringVar(&caDir, "ca", "", "directory of the CA (ca.pem, ca-key.pem)")
	cmd.Flags().StringVar(&role, "role", "", "jobtracker, tasktracker or user")
	cmd.Flags().StringVar(&name, "name", "", "the user name, the tracker name, or the JobTracker's name (Subject CN)")
	cmd.Flags().StringSliceVar(&hosts, "hosts", nil, "host names and IP addresses the daemon is reached at (jobtracker and tasktracker; comma-separated)")
	cmd.Flags().StringSliceVar(&groups, "groups", nil, "the user's groups, for ACLs (user only; comma-separated)")
	cmd.Flags().StringVar(&out, "out", "", "directory to write NAME.pem and NAME-key.pem to (default: the CA's)")
	cmd.Flags().IntVar(&days, "days", 365, "validity in days (at most the CA's)")
	cmd.Flags().BoolVar(&force, "force", false, "replace existing files")
	return cmd
}

func newCertsShowCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "show FILE...",
		Short: "Print the name, role, groups, hosts and validity of certificates",
		Args:  cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			for _, f := range args {
				d, err := security.Describe(f)
				if err != nil {
					return err
				}
				fmt.Fprint(os.Stdout, d)
			}
			return nil
		},
	}
}
