package hdfsevents.glue;

import org.apache.spark.sql.Column;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.catalyst.expressions.Expression;
import org.apache.spark.sql.catalyst.expressions.codegen.CodegenContext;
import org.apache.spark.sql.catalyst.expressions.codegen.CodegenFallback;
import org.apache.spark.sql.catalyst.expressions.codegen.ExprCode;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.Metadata;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.unsafe.types.UTF8String;
import scala.collection.IndexedSeq;
import scala.collection.JavaConverters;
import scala.collection.Seq;

/**
 * parse_canonical_line(line): struct&lt;event, not_canonical&gt; (CanonicalLine) as a Catalyst
 * expression, so whole-stage code calls the scanner on the line's bytes directly: no conversion
 * of the line to a Java String and of the result back, as a registered Java UDF would make.
 *
 * <p>Built from Python through {@link #column}: the event schema comes as Spark's JSON of it
 * (glue_jobs.schema), so the field list lives in one place.
 */
public final class ParseCanonicalLine extends Expression
        implements CodegenFallback, java.io.Serializable {
    private static final long serialVersionUID = 1L;

    private final Expression line;
    private final String eventSchemaJson;
    private final String corruptRecord;
    private final CanonicalLine parser;
    private final StructType resultType;

    public ParseCanonicalLine(Expression line, String eventSchemaJson, String corruptRecord) {
        this.line = line;
        this.eventSchemaJson = eventSchemaJson;
        this.corruptRecord = corruptRecord;
        StructType schema = (StructType) DataType.fromJson(eventSchemaJson);
        this.parser = new CanonicalLine(schema, 1);
        StructType event = schema.add(corruptRecord, DataTypes.StringType, true);
        this.resultType = new StructType(new StructField[] {
            new StructField("event", event, true, Metadata.empty()),
            new StructField("not_canonical", DataTypes.StringType, true, Metadata.empty())});
    }

    /** A copy over a new child: Catalyst's rules copy a plan's expressions many times while
     * they plan one query, and parsing the schema's JSON again for each copy was ~13 % of a
     * compaction test's JVM samples (JFR). The parser keeps no state between lines. */
    private ParseCanonicalLine(Expression line, ParseCanonicalLine of) {
        this.line = line;
        this.eventSchemaJson = of.eventSchemaJson;
        this.corruptRecord = of.corruptRecord;
        this.parser = of.parser;
        this.resultType = of.resultType;
    }

    /** The expression over `line` as a Column. The event struct ends with a string field
     * named `corruptRecord`, always null: the type of from_json's PERMISSIVE result, which
     * stands in for the event of a line that is not canonical. */
    public static Column column(Column line, String eventSchemaJson, String corruptRecord) {
        return new Column(new ParseCanonicalLine(line.expr(), eventSchemaJson, corruptRecord));
    }

    @Override
    public Seq<Expression> children() {
        return JavaConverters.asScalaBuffer(java.util.List.of(line)).toList();
    }

    @Override
    public boolean nullable() {
        return line.nullable();
    }

    @Override
    public DataType dataType() {
        return resultType;
    }

    @Override
    public Object eval(InternalRow input) {
        Object value = line.eval(input);
        return value == null ? null : parser.parse((UTF8String) value);
    }

    @Override
    public ExprCode doGenCode(CodegenContext ctx, ExprCode ev) {
        return CodegenFallback.super.doGenCode(ctx, ev);
    }

    @Override
    public Expression withNewChildrenInternal(IndexedSeq<Expression> newChildren) {
        return new ParseCanonicalLine(newChildren.apply(0), this);
    }

    @Override
    public String prettyName() {
        return "parse_canonical_line";
    }

    /** The plan shows the line only: the schema's JSON is 3 kB. */
    @Override
    public scala.collection.Iterator<Object> flatArguments() {
        return JavaConverters.asScalaIterator(java.util.List.<Object>of(line).iterator());
    }

    @Override
    public int productArity() {
        return 3;
    }

    @Override
    public Object productElement(int n) {
        return switch (n) {
            case 0 -> line;
            case 1 -> eventSchemaJson;
            case 2 -> corruptRecord;
            default -> throw new IndexOutOfBoundsException(n);
        };
    }

    @Override
    public boolean canEqual(Object that) {
        return that instanceof ParseCanonicalLine;
    }

    @Override
    public boolean equals(Object that) {
        return that instanceof ParseCanonicalLine other && line.equals(other.line)
            && eventSchemaJson.equals(other.eventSchemaJson)
            && corruptRecord.equals(other.corruptRecord);
    }

    @Override
    public int hashCode() {
        return line.hashCode() * 31 + eventSchemaJson.hashCode();
    }
}
