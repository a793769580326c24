package security

import (
	"fmt"
	"slices"
	"strings"
)

// ACL is a Hadoop access control list: "user1,user2 group1,group2" — a
// comma-separated list of users, then a space, then a comma-separated list
// of groups. "*" (alone, white space around it allowed) allows everyone;
// an empty list, or " ", allows nobody. As in Hadoop, the first space ends
// the users: "alice, bob" names the user alice and the group bob, so lists
// hold no spaces.
type ACL struct {
	all    bool
	users  []string
	groups []string
	text   string
}

// ParseACL parses an ACL as Hadoop's AccessControlList does. Every string
// is an ACL; empty entries are dropped.
func ParseACL(s string) ACL {
	a := ACL{text: s}
	if strings.TrimSpace(s) == "*" {
		a.all = true
		return a
	}
	users, groups, _ := strings.Cut(s, " ")
	a.users = splitList(users)
	a.groups = splitList(groups)
	return a
}

func splitList(s string) []string {
	var out []string
	for _, e := range strings.Split(s, ",") {
		if e = strings.TrimSpace(e); e != "" && !slices.Contains(out, e) {
			out = append(out, e)
		}
	}
	return out
}

// Allows tells whether the ACL admits id: everyone for "*", else its name
// among the users or one of its groups among the groups.
func (a ACL) Allows(id Identity) bool {
	if a.all {
		return true
	}
	if slices.Contains(a.users, id.Name) {
		return true
	}
	for _, g := range id.Groups {
		if slices.Contains(a.groups, g) {
			return true
		}
	}
	return false
}

// AllowsAll tells whether the ACL is "*".
func (a ACL) AllowsAll() bool { return a.all }

// Users are the ACL's users (none for "*").
func (a ACL) Users() []string { return slices.Clone(a.users) }

// Groups are the ACL's groups (none for "*").
func (a ACL) Groups() []string { return slices.Clone(a.groups) }

// String is the ACL as it was written.
func (a ACL) String() string { return a.text }

// JobOp is an operation on a job that a job ACL guards.
type JobOp struct {
	// Verb names it in messages ("view", "modify").
	Verb string
	// Key is the job's configuration key holding its ACL.
	Key string
}

// The operations job ACLs guard, as in Hadoop: viewing (status, counters,
// history) and modifying (killing).
var (
	ViewJob   = JobOp{Verb: "view", Key: KeyJobViewACL}
	ModifyJob = JobOp{Verb: "modify", Key: KeyJobModifyACL}
)

// CheckJobAccess decides, as Hadoop's JobACLsManager does, whether id may
// perform op on job jobID of owner, given the cluster administrators and
// the job's ACL for op: the owner and the administrators always may,
// others only if the job's ACL admits them. The refusal names the user,
// the job, its owner and the ACL.
func CheckJobAccess(id Identity, op JobOp, jobID, owner string, admins, jobACL ACL) error {
	if id.Name == owner && owner != "" {
		return nil
	}
	if admins.Allows(id) || jobACL.Allows(id) {
		return nil
	}
	who := "user " + id.Name
	if len(id.Groups) > 0 {
		who += " (groups " + strings.Join(id.Groups, ",") + ")"
	}
	ownerText := owner
	if ownerText == "" {
		ownerText = "(no owner recorded)"
	}
	return fmt.Errorf("%s may not %s job %s of user %s: not its owner, not a cluster administrator (%s %q), and not allowed by its %s %q",
		who, op.Verb, jobID, ownerText, KeyAdmins, admins.String(), op.Key, jobACL.String())
}
