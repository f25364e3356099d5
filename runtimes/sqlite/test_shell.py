"""Unit tests of the sqlite shell's dot-commands (shell.py), run by runbox's python runtime
(tests/all/runtimes.rs: the two files given as input files). Each test runs the shell as
a run does, on a database and settings of its own, its output captured."""
import io
import os
import tempfile
import unittest

import shell

FRUIT = (
    "create table fruit (name text, n integer, price real);\n"
    "insert into fruit values ('apple', 3, 0.5), ('kiwi', NULL, 12.0), ('fig', 12, -1.25);\n"
)


class Shell(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp()
        shell.DATABASE = os.path.join(self.dir, "main.db")
        shell.SETTINGS = os.path.join(self.dir, "settings")

    def run_sql(self, sql, *options):
        """The shell's exit status and output for the program `sql`."""
        path = os.path.join(self.dir, "main.sql")
        with open(path, "w") as f:
            f.write(sql)
        out = io.StringIO()
        return shell.shell(["shell.py", path], stdout=out), out.getvalue()

    def test_list_mode_and_headers(self):
        self.assertEqual(
            self.run_sql(FRUIT + "select name, n from fruit where n > 1;\n.headers on\nselect count(*) as c from fruit;"),
            (0, "apple|3\nfig|12\nc\n3\n"))

    def test_csv_separator_and_nullvalue(self):
        self.assertEqual(
            self.run_sql(FRUIT + ".mode csv\n.nullvalue -\nselect name, n from fruit order by name;"),
            (0, "apple,3\r\nfig,12\r\nkiwi,-\r\n"))
        self.assertEqual(
            self.run_sql(".mode list\n.separator ; ~\nselect 1, 2;\n"),
            (0, "1;2~"))

    def test_column_modes(self):
        status, text = self.run_sql(FRUIT + ".mode markdown\nselect name, price from fruit order by rowid;")
        self.assertEqual(status, 0)
        self.assertEqual(text.splitlines()[:2], ["| name  | price |", "|-------|-------|"])
        status, text = self.run_sql(".mode json\nselect name from fruit where n is null;")
        self.assertEqual(text, '[{"name":"kiwi"}]\n')

    def test_settings_carry_over_to_the_next_call(self):
        self.assertEqual(self.run_sql(".mode csv\n.headers on"), (0, ""))
        self.assertEqual(self.run_sql("select 1 as one, 'a b' as two;"), (0, 'one,two\r\n1,"a b"\r\n'))

    def test_tables_schema_and_import(self):
        data = os.path.join(self.dir, "rows.csv")
        with open(data, "w") as f:
            f.write("city,people\nOslo,709000\nLima,10092000\n")
        status, text = self.run_sql(f".import --csv {data} cities\n.tables\n.schema cities\nselect sum(people) from cities;")
        self.assertEqual(status, 0, text)
        lines = text.splitlines()
        self.assertEqual(lines[0], "cities")
        self.assertTrue(lines[1].startswith("CREATE TABLE") and '"cities"' in lines[1], lines[1])
        self.assertEqual(lines[-1], "10801000")

    def test_exit_code_and_a_failed_statement(self):
        self.assertEqual(self.run_sql("select 'bye';\n.exit 3"), (3, "bye\n"))
        self.assertEqual(self.run_sql("select * from missing;")[0], 1)

    def test_unknown_or_misused_dot_commands_fail_and_say_so(self):
        status, text = self.run_sql(".timer on\nselect 1;")
        self.assertEqual((status, text), (1, "1\n"))
        self.assertEqual(self.run_sql(".headers\nselect 2;"), (1, "2\n"))

    def test_as_a_command_of_the_shell(self):
        out = io.StringIO()
        status = shell.shell(["shell.py", "--command", self.dir, "-csv", "-header", "t.db",
                              "create table t(x); insert into t values (7);", "select x * 6 as y from t;"],
                             stdout=out)
        self.assertEqual((status, out.getvalue()), (0, "y\r\n42\r\n"))
        self.assertTrue(os.path.exists(os.path.join(self.dir, "t.db")))


if __name__ == "__main__":
    unittest.main()
