package main

import (
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"mailbolt/app"
	"mailbolt/storage"
	"mailbolt/web"
)

// withAdmin runs fn against the server on --data-dir when one is running
// (through its management socket), or else on the database opened here.
// Commands that only read or change existing records pass mustExist, so a
// mistyped --data-dir is an error rather than a new empty database. Either
// way fn's calls go through app.TextAdmin, so a value that is not UTF-8 is
// refused the same on both paths, not stored with U+FFFD by the second.
func withAdmin(cmd *cobra.Command, mustExist bool, fn func(app.Admin) error) error {
	dataDir, _ := cmd.Flags().GetString("data-dir")
	if !sharedDatabase(cmd) {
		if c, err := web.DialAdmin(dataDir); err == nil {
			return fn(app.TextAdmin{Admin: c})
		}
	}
	o := storageOptions(cmd)
	o.MustExist = mustExist
	db, err := storage.Open(dataDir, o)
	if errors.Is(err, storage.ErrNoDatabase) && o.Database != "" {
		return fmt.Errorf("%w: check --database (or MAILBOLT_DATABASE), or start `mailbolt serve --database …` once (or `mailbolt migrate` into it)", err)
	}
	if errors.Is(err, storage.ErrNoDatabase) {
		return fmt.Errorf("no database in %s: check --data-dir (or MAILBOLT_DATA_DIR), or start `mailbolt serve` there once", dataDir)
	}
	if errors.Is(err, storage.ErrLocked) {
		return fmt.Errorf("the database in %s is locked by another process, and no server answers on its management socket", dataDir)
	}
	if err != nil {
		return openFailed(dataDir, err)
	}
	defer db.Close()
	if c := db.PreMigrationCopy(); c != "" {
		fmt.Fprintf(cmd.ErrOrStderr(), "the database schema was migrated; the file as it was before is kept at %s\n", c)
	}
	if db.SecretKeyCreated() {
		fmt.Fprintf(cmd.ErrOrStderr(), "created the secret key file %s: keep a copy of it with your backups\n", db.SecretKeyFile())
	}
	a, err := app.New(db, app.DefaultOptions())
	if err != nil {
		return err
	}
	return fn(app.TextAdmin{Admin: app.LocalAdmin{App: a}})
}

// openFailed is the error of a database that could not be opened: a
// damaged one names the restore command to run.
func openFailed(dataDir string, err error) error {
	if errors.Is(err, storage.ErrDamaged) {
		return fmt.Errorf("%w (mailbolt restore --from BACKUP_FILE --data-dir %s)", err, dataDir)
	}
	return err
}

func newAccountsCommand() *cobra.Command {
	cmd := &cobra.Command{Use: "accounts", Short: "Manage accounts (tenants)"}
	var in app.AccountInput
	create := &cobra.Command{
		Use:   "create",
		Short: "Create an account; prints its id as the last line",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return withAdmin(cmd, false, func(a app.Admin) error {
				acct, err := a.CreateAccount(in)
				if err != nil {
					return err
				}
				out := cmd.OutOrStdout()
				fmt.Fprintf(out, "created account %q on plan %s\n", acct.Name, acct.Plan)
				fmt.Fprintln(out, acct.ID)
				return nil
			})
		},
	}
	create.Flags().StringVar(&in.Name, "name", "", "account name (required)")
	create.Flags().StringVar(&in.Plan, "plan", app.DefaultPlan, "plan: "+strings.Join(app.PlanNames(), ", "))
	create.Flags().IntVar(&in.RateLimit, "rate-limit", 0, "requests per second per key, overriding the plan (enterprise)")
	create.Flags().IntVar(&in.BatchSize, "batch-size", 0, "messages per batch, overriding the plan (enterprise)")
	create.Flags().BoolVar(&in.TrackOpens, "track-opens", false, "track opens of the account's messages unless a message says otherwise")
	create.Flags().BoolVar(&in.TrackClicks, "track-clicks", false, "track clicks of the account's messages unless a message says otherwise")
	create.Flags().StringVar(&in.Email, "email", "", "the account's contact address, for notices when it has no owner")
	create.MarkFlagRequired("name")

	update := &cobra.Command{
		Use:   "update ID",
		Short: "Change an account: only the flags given change",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			var up app.AccountUpdate
			f := cmd.Flags()
			str := func(name string, dst **string) {
				if f.Changed(name) {
					v, _ := f.GetString(name)
					*dst = &v
				}
			}
			boolean := func(name string, dst **bool) {
				if f.Changed(name) {
					v, _ := f.GetBool(name)
					*dst = &v
				}
			}
			str("name", &up.Name)
			str("plan", &up.Plan)
			str("email", &up.Email)
			boolean("track-opens", &up.TrackOpens)
			boolean("track-clicks", &up.TrackClicks)
			for name, dst := range map[string]**int{"rate-limit": &up.RateLimit, "batch-size": &up.BatchSize} {
				if f.Changed(name) {
					v, _ := f.GetInt(name)
					*dst = &v
				}
			}
			if up == (app.AccountUpdate{}) {
				return errors.New("nothing to change: give --name, --plan, --email, --track-opens, --track-clicks, --rate-limit or --batch-size")
			}
			return withAdmin(cmd, true, func(a app.Admin) error {
				acct, err := a.UpdateAccount(args[0], up)
				if err != nil {
					return err
				}
				fmt.Fprintf(cmd.OutOrStdout(), "updated account %q: plan %s (%d requests/s per key, %d messages per batch), email %q, track opens %t, track clicks %t\n",
					acct.Name, acct.Plan, acct.RateLimit, acct.BatchSize, acct.Email, acct.TrackOpens, acct.TrackClicks)
				return nil
			})
		},
	}
	update.Flags().String("name", "", "new account name")
	update.Flags().String("plan", "", "new plan: "+strings.Join(app.PlanNames(), ", "))
	update.Flags().String("email", "", "new contact address (\"\" removes it)")
	update.Flags().Bool("track-opens", false, "track opens of the account's messages by default")
	update.Flags().Bool("track-clicks", false, "track clicks of the account's messages by default")
	update.Flags().Int("rate-limit", 0, "requests per second per key, overriding the plan (enterprise); 0 goes back to the plan's")
	update.Flags().Int("batch-size", 0, "messages per batch, overriding the plan (enterprise); 0 goes back to the plan's")

	list := &cobra.Command{
		Use:   "list",
		Short: "List accounts",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return withAdmin(cmd, true, func(a app.Admin) error {
				accts, err := a.ListAccounts()
				if err != nil {
					return err
				}
				tw := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 2, ' ', 0)
				fmt.Fprintln(tw, "ID\tNAME\tPLAN\tRATE/S\tCREATED")
				for _, acct := range accts {
					fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%s\n", acct.ID, acct.Name, acct.Plan,
						acct.RateLimit, acct.CreatedAt.UTC().Format(time.RFC3339))
				}
				return tw.Flush()
			})
		},
	}
	cmd.AddCommand(create, update, list, newNoticesCommand())
	return cmd
}

// newNoticesCommand lists the deprecation notices: `accounts notices`.
func newNoticesCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "notices",
		Short: "List deprecation announcements: who was told by email and when, and the accounts that could not be told",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return withAdmin(cmd, true, func(a app.Admin) error {
				v, err := a.Notices()
				if err != nil {
					return err
				}
				return printNotices(cmd.OutOrStdout(), v)
			})
		},
	}
}

func printNotices(w io.Writer, v app.NoticesView) error {
	if len(v.Announcements) == 0 {
		_, err := fmt.Fprintln(w, "no deprecation has been announced")
		return err
	}
	date := func(t *time.Time) string {
		if t == nil {
			return "-"
		}
		return t.UTC().Format(time.RFC3339)
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "VERSION\tSUNSET\tANNOUNCED")
	for _, an := range v.Announcements {
		note := ""
		if an.Upgrade {
			note = "\t(recorded at the upgrade: already deprecating)"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s%s\n", an.Version, date(an.Sunset), an.AnnouncedAt.UTC().Format(time.RFC3339), note)
	}
	fmt.Fprintln(tw, "\nVERSION\tSUNSET\tACCOUNT\tRECIPIENT\tAT\tMESSAGE OR WHY NOT SENT")
	for _, n := range v.Notices {
		to, what := n.Recipient, n.MessageID
		if n.Reason != "" {
			to, what = "-", "not sent: "+n.Reason
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", n.Version, date(n.Sunset), n.AccountID, to,
			n.At.UTC().Format(time.RFC3339), what)
	}
	return tw.Flush()
}

func newKeysCommand() *cobra.Command {
	cmd := &cobra.Command{Use: "keys", Short: "Manage API keys"}
	var (
		account, name, expiresIn string
		scopes                   []string
		test                     bool
	)
	create := &cobra.Command{
		Use:   "create",
		Short: "Create an API key; prints the key as the last line (it is shown only once)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			expires, err := app.ParseExpiresIn(time.Now(), expiresIn)
			if err != nil {
				return err
			}
			return withAdmin(cmd, true, func(a app.Admin) error {
				mode := app.ModeLive
				if test {
					mode = app.ModeTest
				}
				k, err := a.CreateKey(account, app.KeyInput{Name: name, Scopes: scopes, Mode: mode, ExpiresAt: expires})
				if err != nil {
					return err
				}
				out := cmd.OutOrStdout()
				fmt.Fprintf(out, "created key %s (%s) with scopes %s", k.Key.ID, k.Key.Name, strings.Join(k.Key.Scopes, ","))
				if k.Key.ExpiresAt != nil {
					fmt.Fprintf(out, ", expires %s", k.Key.ExpiresAt.UTC().Format(time.RFC3339))
				}
				fmt.Fprintln(out, "\nstore this key now; it cannot be shown again:")
				fmt.Fprintln(out, k.Secret)
				return nil
			})
		},
	}
	create.Flags().StringVar(&account, "account", "", "account id (required)")
	create.Flags().StringVar(&name, "name", "", "key name (required)")
	create.Flags().StringSliceVar(&scopes, "scopes", nil, "comma-separated scopes (default *)")
	create.Flags().BoolVar(&test, "test", false, "create a sandbox (svc_test_) key")
	create.Flags().StringVar(&expiresIn, "expires-in", "", "lifetime, e.g. 720h or 90d (default: never expires)")
	create.MarkFlagRequired("account")
	create.MarkFlagRequired("name")

	var listAccount string
	list := &cobra.Command{
		Use:   "list",
		Short: "List an account's API keys",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return withAdmin(cmd, true, func(a app.Admin) error {
				keys, err := a.ListKeys(listAccount)
				if err != nil {
					return err
				}
				tw := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 2, ' ', 0)
				fmt.Fprintln(tw, "ID\tNAME\tPREFIX\tMODE\tSCOPES\tCREATED\tEXPIRES\tREVOKED")
				for _, k := range keys {
					mode := "live"
					if k.Test {
						mode = "test"
					}
					fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", k.ID, k.Name, k.Prefix, mode,
						strings.Join(k.Scopes, ","), k.CreatedAt.UTC().Format(time.RFC3339), timeOrDash(k.ExpiresAt), timeOrDash(k.RevokedAt))
				}
				return tw.Flush()
			})
		},
	}
	list.Flags().StringVar(&listAccount, "account", "", "account id (required)")
	list.MarkFlagRequired("account")

	revoke := &cobra.Command{
		Use:   "revoke KEY_ID",
		Short: "Revoke an API key; it stops working on the next request",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return withAdmin(cmd, true, func(a app.Admin) error {
				k, err := a.RevokeKey(args[0])
				if err != nil {
					return err
				}
				fmt.Fprintf(cmd.OutOrStdout(), "revoked key %s (%s)\n", k.ID, k.Name)
				return nil
			})
		},
	}
	cmd.AddCommand(create, list, revoke)
	return cmd
}

func timeOrDash(t *time.Time) string {
	if t == nil {
		return "-"
	}
	return t.UTC().Format(time.RFC3339)
}

func newBackupCommand() *cobra.Command {
	var out string
	cmd := &cobra.Command{
		Use:   "backup",
		Short: "Write a consistent, checked copy of the database (safe while serving)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			dataDir, _ := cmd.Flags().GetString("data-dir")
			if sharedDatabase(cmd) {
				return errors.New("backup copies the embedded database file; for PostgreSQL (--database) use pg_dump, and keep the secret key file with the dump")
			}
			return withAdmin(cmd, true, func(a app.Admin) error {
				prog := startProgress(cmd.ErrOrStderr(), copyStatus("backup: copying", filepath.Join(dataDir, storage.FileName), out))
				n, err := a.Backup(out)
				prog.Done("")
				if err != nil {
					return err
				}
				w := cmd.OutOrStdout()
				fmt.Fprintf(w, "backup written to %s (%d bytes, consistency check passed)\n", out, n)
				fmt.Fprintf(w, "its secrets are sealed with the key in %s: keep a copy of that file with the backup; "+
					"without it the backup cannot be restored\n", secretKeyFile(cmd))
				return nil
			})
		},
	}
	cmd.Flags().StringVar(&out, "out", "", "file to write the backup to (required)")
	cmd.MarkFlagRequired("out")
	return cmd
}

func newRestoreCommand() *cobra.Command {
	var from string
	cmd := &cobra.Command{
		Use:   "restore",
		Short: "Replace the database with a backup (the server must be stopped)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			dataDir, _ := cmd.Flags().GetString("data-dir")
			if sharedDatabase(cmd) {
				return errors.New("restore replaces the embedded database file; for PostgreSQL (--database) use pg_restore into an empty database")
			}
			if c, err := web.DialAdmin(dataDir); err == nil {
				_ = c
				return fmt.Errorf("a server is running on %s: stop it before restoring", dataDir)
			}
			keyFile, _ := cmd.Flags().GetString("secret-key-file")
			prog := startProgress(cmd.ErrOrStderr(), copyStatus("restore: checking and copying", from, dataDir))
			kept, err := storage.Restore(from, dataDir, keyFile, time.Now())
			prog.Done("")
			if errors.Is(err, storage.ErrLocked) {
				return fmt.Errorf("the database in %s is in use: stop the server before restoring", dataDir)
			}
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			fmt.Fprintf(out, "restored %s into %s\n", from, dataDir)
			if kept != "" {
				fmt.Fprintf(out, "the previous database is kept at %s\n", kept)
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&from, "from", "", "backup file to restore (required)")
	cmd.MarkFlagRequired("from")
	return cmd
}
