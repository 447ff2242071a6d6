// Trino's own SQL parser (Athena's engine) on SQL files: prints "OK <file>" or
// "FAIL <file>: <message>" for each, exits 1 if any failed. Run as a single-file program (no
// build step): java -cp '.hadoop/trino/*' tests/kit/athena_trino_parser.java a.sql b.sql
// Syntax only: a type or function name Trino does not have still parses (the analyzer, which
// needs the catalog, would refuse it).
import io.trino.sql.parser.ParsingException;
import io.trino.sql.parser.SqlParser;
import java.nio.file.Files;
import java.nio.file.Path;

public class AthenaTrinoParser {
    public static void main(String[] args) throws Exception {
        SqlParser parser = new SqlParser();
        int failed = 0;
        for (String file : args) {
            try {
                parser.createStatement(Files.readString(Path.of(file)));
                System.out.println("OK " + file);
            } catch (ParsingException e) {
                failed++;
                System.out.println("FAIL " + file + ": " + e.getMessage());
            }
        }
        System.exit(failed == 0 ? 0 : 1);
    }
}
