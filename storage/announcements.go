package storage

import (
	"time"
)

// Announcement is the deprecation of an API version with one sunset date,
// recorded by the first start that ran with that pair. Its key is the pair,
// so of several nodes starting at once only one records it and sends the
// notices (spec §9.5: breaking changes are announced by email).
type Announcement struct {
	Version string `json:"version"`
	// Sunset is the version's sunset instant; zero when none was given.
	Sunset      time.Time `json:"sunset,omitzero"`
	AnnouncedAt time.Time `json:"announced_at"`
	// Upgrade: recorded by a server that was already deprecating when it
	// was upgraded to a build that records announcements, so its dates
	// were not checked against the six-month warning phase at the start.
	Upgrade bool `json:"upgrade,omitempty"`
}

// Notice is the deprecation notice of one announcement to one account:
// sent to Recipient as message MessageID, or not sendable, for Reason.
type Notice struct {
	Version   string    `json:"version"`
	Sunset    time.Time `json:"sunset,omitzero"`
	AccountID string    `json:"account_id"`
	Recipient string    `json:"recipient,omitempty"`
	At        time.Time `json:"at"`
	MessageID string    `json:"message_id,omitempty"`
	Reason    string    `json:"reason,omitempty"`
}

// announcementKey is <version>·<sunset RFC 3339 UTC, or "" for none>.
func announcementKey(version string, sunset time.Time) []byte {
	s := ""
	if !sunset.IsZero() {
		s = sunset.UTC().Format(time.RFC3339Nano)
	}
	return join(version, s)
}

// ClaimAnnouncement records a; ErrExists when its (version, sunset) pair
// is recorded already, by this node or another. It also clears the mark
// an upgrade left (UpgradeMarked): the server now records announcements.
func (tx *Tx) ClaimAnnouncement(a Announcement) error {
	b := tx.bucket(bucketAnnouncements)
	k := announcementKey(a.Version, a.Sunset)
	if b.Get(k) != nil {
		return ErrExists
	}
	if err := putJSON(b, k, a); err != nil {
		return err
	}
	return tx.ClearUpgradeMark()
}

// Announcements lists every recorded announcement, by version and sunset.
// A file from before schema v10 (read-only, not migrated) has none.
func (tx *Tx) Announcements() ([]Announcement, error) {
	b := tx.btx.Bucket(bucketAnnouncements)
	if b == nil {
		return nil, nil
	}
	list, _, err := scanJSON[Announcement](b, []byte{}, ListOptions{Limit: -1})
	return list, err
}

// PutNotice records the notice of one announcement to one account (one
// recipient of it, or none with a reason).
func (tx *Tx) PutNotice(n Notice) error {
	k := append(announcementKey(n.Version, n.Sunset), sep)
	k = append(k, join(n.AccountID, n.Recipient)...)
	return putJSON(tx.bucket(bucketNotices), k, n)
}

// Notices lists every recorded notice, by announcement, account and
// recipient. A file from before schema v10 has none.
func (tx *Tx) Notices() ([]Notice, error) {
	b := tx.btx.Bucket(bucketNotices)
	if b == nil {
		return nil, nil
	}
	list, _, err := scanJSON[Notice](b, []byte{}, ListOptions{Limit: -1})
	return list, err
}

// UpgradeMarked reports whether the file held accounts when it was
// migrated to schema v10 and no announcement has been recorded since: a
// server upgraded while it may already have been deprecating a version.
func (tx *Tx) UpgradeMarked() bool {
	return tx.bucket(bucketMeta).Get(keyAnnounceUpgrade) != nil
}

// ClearUpgradeMark removes the mark UpgradeMarked reads.
func (tx *Tx) ClearUpgradeMark() error {
	return tx.bucket(bucketMeta).Delete(keyAnnounceUpgrade)
}
