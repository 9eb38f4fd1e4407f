package main

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"mailbolt/app"
	"mailbolt/storage"
)

// newSuppressionsCommand is `mailbolt suppressions import|export`: an
// account's suppression list to and from a CSV file, the format of the
// API's import and export.
func newSuppressionsCommand() *cobra.Command {
	cmd := &cobra.Command{Use: "suppressions", Short: "Import and export an account's suppression list (CSV)"}
	var account string

	imp := &cobra.Command{
		Use:   "import --account ID FILE",
		Short: "Add the suppressions of a CSV file (- for stdin) to an account, all or nothing",
		Long: "Adds the suppressions of FILE to the account, in one transaction: a bad row refuses the whole file, naming\n" +
			"its line. FILE is CSV with a header row naming the columns recipient (or email), reason and stream, as\n" +
			"`suppressions export` writes it; at most 10,000 rows.",
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			rows, err := readSuppressionsFile(cmd, args[0])
			if err != nil {
				return err
			}
			return withAdmin(cmd, true, func(a app.Admin) error {
				res, err := a.ImportSuppressions(account, rows)
				if err != nil {
					return fmt.Errorf("%s: %w", args[0], err)
				}
				fmt.Fprintf(cmd.OutOrStdout(), "imported %d rows into account %s: %d added, %d already present\n",
					len(rows), account, res.Added, res.AlreadyPresent)
				return nil
			})
		},
	}
	imp.Flags().StringVar(&account, "account", "", "account id (required)")
	imp.MarkFlagRequired("account")

	var stream string
	exp := &cobra.Command{
		Use:   "export --account ID [FILE]",
		Short: "Write an account's suppressions as CSV to FILE, or to stdout without one (or with -)",
		Args:  cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 || args[0] == "-" {
				out := bufio.NewWriter(cmd.OutOrStdout())
				err := withAdmin(cmd, true, func(a app.Admin) error { return a.ExportSuppressions(account, stream, out) })
				if ferr := out.Flush(); err == nil {
					err = ferr
				}
				return err
			}
			return exportToFile(cmd, args[0], func(w io.Writer) error {
				return withAdmin(cmd, true, func(a app.Admin) error { return a.ExportSuppressions(account, stream, w) })
			})
		},
	}
	exp.Flags().StringVar(&account, "account", "", "account id (required)")
	exp.Flags().StringVar(&stream, "stream", "", "export only the entries that name this stream: transactional or broadcast")
	exp.MarkFlagRequired("account")

	cmd.AddCommand(imp, exp)
	return cmd
}

// readSuppressionsFile reads a CSV file (or stdin for -) into rows that
// keep their line numbers.
func readSuppressionsFile(cmd *cobra.Command, name string) ([]app.SuppressionInput, error) {
	var in io.Reader = cmd.InOrStdin()
	if name != "-" {
		f, err := os.Open(name)
		if err != nil {
			return nil, err
		}
		defer f.Close()
		in = f
	}
	rows, err := app.ReadSuppressionsCSV(in)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return rows, nil
}

// exportToFile writes the export to a temporary file beside name and
// renames it into place once complete (storage.WriteOutFile), so a failed
// export never leaves a file that looks like a whole list. A name that is
// the database or the secret key file of the command's data dir is
// refused before anything is written.
func exportToFile(cmd *cobra.Command, name string, export func(io.Writer) error) error {
	dataDir, _ := cmd.Flags().GetString("data-dir")
	if err := storage.CheckOutFile(name, filepath.Join(dataDir, storage.FileName), secretKeyFile(cmd)); err != nil {
		var protected *storage.ProtectedFileError
		if errors.As(err, &protected) {
			return fmt.Errorf("%s is %s: write the export to another file", name, protected.What)
		}
		return err
	}
	err := storage.WriteOutFile(name, func(f io.Writer) error {
		w := bufio.NewWriter(f)
		if err := export(w); err != nil {
			return err
		}
		return w.Flush()
	})
	if err != nil {
		return err
	}
	fmt.Fprintf(cmd.OutOrStdout(), "wrote %s\n", name)
	return nil
}
