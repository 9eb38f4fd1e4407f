package storage

import (
	"fmt"
	"slices"
	"strings"
)

// migrateLoginAddresses (v20) does for the addresses of people what v19
// did for recipients: what is keyed by, or names, a person's address and
// was stored with a Unicode domain (lower-cased, the form before
// AddressKey) moves to its AddressKey form, so that the member, the login
// and its sessions are found under either spelling:
//
//   - team members: the record, team_emails and team_by_email;
//   - people (dashboard logins): the key and the record, their TOTP keys
//     sealed again under the context that names the new key;
//   - sessions (the record and sessions_by_email) and set-password links;
//   - an account's contact address, and the person an API key names as
//     its maker (which a member's removal revokes by).
//
// Records of two different spellings that become one key are never
// merged: each holds a role, or a password and a second factor, of its
// own.
//
//   - Two members of one account: the migration refuses, naming both, and
//     changes nothing (the file stays at v19, which the release before
//     opens, to remove one of them).
//   - Two people: a person who is a member of no account cannot log in,
//     so when only one of them is a member anywhere (of any status), it is
//     kept and the others are dropped, with their sessions and
//     set-password links, each noted in the log; when none is, the one
//     whose password was set last is kept. When more than one is a member
//     somewhere, the migration refuses, naming them and their accounts.
//
// Audit entries keep the actor they were recorded with: they are history,
// as events are.
func migrateLoginAddresses(tx kvTx, env *migrationEnv) error {
	members, err := readAll[TeamMember](tx, bucketTeam)
	if err != nil {
		return err
	}
	// memberOf lists, for each address as stored, the accounts it is a
	// member of: a person of none cannot log in.
	memberOf := map[string][]string{}
	for _, m := range members {
		memberOf[m.v.Email] = append(memberOf[m.v.Email], m.v.AccountID)
	}
	var conflicts []string
	conflicts = append(conflicts, memberConflicts(members)...)
	people, err := readAll[Person](tx, bucketPeople)
	if err != nil {
		return err
	}
	moves, drops, personConflicts := planPeople(people, memberOf)
	conflicts = append(conflicts, personConflicts...)
	if len(conflicts) > 0 {
		return addressConflicts(conflicts)
	}

	if err := rekeyMembers(tx, members); err != nil {
		return err
	}
	dropped := map[string]bool{}
	pb := tx.Bucket(bucketPeople)
	for _, d := range drops {
		dropped[d.key] = true
		if err := pb.Delete([]byte(d.key)); err != nil {
			return err
		}
	}
	for _, m := range moves {
		p := m.v
		to := addressKey(m.key)
		for _, f := range p.totpFields() {
			if len(*f.val) == 0 {
				continue
			}
			clear, err := env.seal.open(personContext(p.Email, f.name), *f.val)
			if err != nil {
				return fmt.Errorf("person %s: %w", p.Email, err)
			}
			*f.val = env.seal.seal(personContext(to, f.name), clear)
		}
		p.Email = to
		if err := pb.Delete([]byte(m.key)); err != nil {
			return err
		}
		if err := putJSON(pb, []byte(to), p); err != nil {
			return err
		}
	}
	ended, err := rekeySessions(tx, dropped)
	if err != nil {
		return err
	}
	voided, err := rekeyPasswordLinks(tx, dropped)
	if err != nil {
		return err
	}
	for _, d := range drops {
		env.note(fmt.Sprintf("dashboard login %s dropped: with its domain in A-labels it is %s, the login kept in its place, "+
			"and it was a member of no account, so it could not log in (%d session(s) and %d set-password link(s) of it ended)",
			d.key, addressKey(d.key), ended[d.key], voided[d.key]))
	}
	if err := rekeyAccountEmails(tx); err != nil {
		return err
	}
	return rekeyKeyMakers(tx)
}

// addressConflicts is migration 20's refusal: records of different
// people (or of one person twice) whose addresses become one once their
// domain is in A-labels, which it does not merge; one sentence each,
// naming the records.
type addressConflicts []string

func (e addressConflicts) Error() string {
	return strings.Join(e, "; ") + ". Nothing was changed: the database stays at schema version 19, which the release before this one opens. " +
		"With it, remove members (mailbolt team remove --account ID --email ADDR --keep-keys) until one spelling of each address is left a member of any account, " +
		"start this release again, then add the person back where needed (either spelling is then the one person)"
}

// stored is a record read in a migration with its key.
type stored[T any] struct {
	key string
	v   T
}

// readAll decodes every record of a JSON bucket, in key order.
func readAll[T any](tx kvTx, bucket []byte) ([]stored[T], error) {
	b := tx.Bucket(bucket)
	if b == nil {
		return nil, nil
	}
	var out []stored[T]
	err := b.ForEach(func(k, v []byte) error {
		var r T
		if err := decodeJSON(k, v, &r); err != nil {
			return err
		}
		out = append(out, stored[T]{string(k), r})
		return nil
	})
	return out, err
}

// memberConflicts names the members of one account whose addresses
// become one key.
func memberConflicts(members []stored[TeamMember]) []string {
	groups := map[string][]TeamMember{}
	var order []string
	for _, m := range members {
		k := string(join(m.v.AccountID, addressKey(m.v.Email)))
		if groups[k] == nil {
			order = append(order, k)
		}
		groups[k] = append(groups[k], m.v)
	}
	var out []string
	for _, k := range order {
		g := groups[k]
		if len(g) < 2 {
			continue
		}
		var names []string
		for _, m := range g {
			names = append(names, fmt.Sprintf("%s (member %s, %s, %s)", m.Email, m.ID, m.Role, m.Status))
		}
		out = append(out, fmt.Sprintf("account %s has %d members whose addresses are one, %s, once the domain is in A-labels: %s",
			g[0].AccountID, len(g), addressKey(g[0].Email), strings.Join(names, " and ")))
	}
	return out
}

// planPeople sorts the people whose key changes or collides: those to
// move to their new key, those to drop (a member of no account beside one
// kept), and the collisions it refuses.
func planPeople(people []stored[Person], memberOf map[string][]string) (moves, drops []stored[Person], conflicts []string) {
	groups := map[string][]stored[Person]{}
	var order []string
	for _, p := range people {
		k := addressKey(p.key)
		if groups[k] == nil {
			order = append(order, k)
		}
		groups[k] = append(groups[k], p)
	}
	for _, k := range order {
		g := groups[k]
		var live []stored[Person]
		for _, p := range g {
			if len(memberOf[p.key]) > 0 {
				live = append(live, p)
			}
		}
		if len(live) > 1 {
			var names []string
			for _, p := range live {
				names = append(names, fmt.Sprintf("%s (member of account %s)", p.key, strings.Join(memberOf[p.key], ", ")))
			}
			conflicts = append(conflicts, fmt.Sprintf("%d dashboard logins, each with its own password, are one address, %s, once the domain is in A-labels: %s",
				len(live), k, strings.Join(names, " and ")))
			continue
		}
		keep := slices.MaxFunc(g, func(a, b stored[Person]) int { return a.v.PasswordSetAt.Compare(b.v.PasswordSetAt) })
		if len(live) == 1 {
			keep = live[0]
		}
		for _, p := range g {
			if p.key != keep.key {
				drops = append(drops, p)
			}
		}
		if keep.key != k {
			moves = append(moves, keep)
		}
	}
	return moves, drops, conflicts
}

// rekeyMembers moves each member whose address changes, with its two
// index entries. No two members of one account share the new key.
func rekeyMembers(tx kvTx, members []stored[TeamMember]) error {
	team, emails, byEmail := tx.Bucket(bucketTeam), tx.Bucket(bucketTeamEmails), tx.Bucket(bucketTeamByEmail)
	for _, s := range members {
		m := s.v
		to := addressKey(m.Email)
		if to == m.Email {
			continue
		}
		if err := emails.Delete(join(m.AccountID, m.Email)); err != nil {
			return err
		}
		if err := byEmail.Delete(join(m.Email, m.AccountID)); err != nil {
			return err
		}
		m.Email = to
		if err := putJSON(team, []byte(s.key), m); err != nil {
			return err
		}
		if err := emails.Put(join(m.AccountID, to), []byte(m.ID)); err != nil {
			return err
		}
		if err := byEmail.Put(join(to, m.AccountID), []byte(m.ID)); err != nil {
			return err
		}
	}
	return nil
}

// rekeySessions moves the sessions whose address changes and ends those
// of a dropped person (which must not become sessions of the one kept),
// and returns how many it ended per dropped address.
func rekeySessions(tx kvTx, dropped map[string]bool) (map[string]int, error) {
	sessions, err := readAll[Session](tx, bucketSessions)
	if err != nil {
		return nil, err
	}
	b, byEmail := tx.Bucket(bucketSessions), tx.Bucket(bucketSessionsByEmail)
	ended := map[string]int{}
	for _, s := range sessions {
		to := addressKey(s.v.Email)
		if to == s.v.Email && !dropped[s.v.Email] {
			continue
		}
		if err := byEmail.Delete(append(prefix(s.v.Email), s.key...)); err != nil {
			return nil, err
		}
		if dropped[s.v.Email] {
			ended[s.v.Email]++
			if err := b.Delete([]byte(s.key)); err != nil {
				return nil, err
			}
			continue
		}
		s.v.Email = to
		if err := putJSON(b, []byte(s.key), s.v); err != nil {
			return nil, err
		}
		if err := byEmail.Put(append(prefix(to), s.key...), nil); err != nil {
			return nil, err
		}
	}
	return ended, nil
}

// rekeyPasswordLinks rewrites the address of each set-password link whose
// address changes and removes those of a dropped person, and returns how
// many it removed per dropped address.
func rekeyPasswordLinks(tx kvTx, dropped map[string]bool) (map[string]int, error) {
	links, err := readAll[PasswordLink](tx, bucketPasswordLinks)
	if err != nil {
		return nil, err
	}
	b := tx.Bucket(bucketPasswordLinks)
	voided := map[string]int{}
	for _, l := range links {
		if dropped[l.v.Email] {
			voided[l.v.Email]++
			if err := b.Delete([]byte(l.key)); err != nil {
				return nil, err
			}
			continue
		}
		if to := addressKey(l.v.Email); to != l.v.Email {
			l.v.Email = to
			if err := putJSON(b, []byte(l.key), l.v); err != nil {
				return nil, err
			}
		}
	}
	return voided, nil
}

// rekeyAccountEmails writes each account's contact address in AddressKey
// form.
func rekeyAccountEmails(tx kvTx) error {
	return rewriteAll(tx, bucketAccounts, func(a *Account) bool {
		to := addressKey(a.Email)
		changed := to != a.Email
		a.Email = to
		return changed
	})
}

// rekeyKeyMakers writes the person an API key names as its maker in
// AddressKey form, the form of the member whose removal revokes it.
func rekeyKeyMakers(tx kvTx) error {
	return rewriteAll(tx, bucketAPIKeys, func(k *APIKey) bool {
		to := addressKey(k.CreatedBy)
		changed := strings.Contains(k.CreatedBy, "@") && to != k.CreatedBy
		if changed {
			k.CreatedBy = to
		}
		return changed
	})
}

// rewriteAll puts back each record of a JSON bucket that fix changed.
func rewriteAll[T any](tx kvTx, bucket []byte, fix func(*T) bool) error {
	all, err := readAll[T](tx, bucket)
	if err != nil {
		return err
	}
	b := tx.Bucket(bucket)
	for _, r := range all {
		if !fix(&r.v) {
			continue
		}
		if err := putJSON(b, []byte(r.key), r.v); err != nil {
			return err
		}
	}
	return nil
}
