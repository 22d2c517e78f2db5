/*
 * Test driver for Java Paimon: one JVM per test session, one JSON request per line on stdin,
 * one JSON response per line on stdout. Compiled with javac against the shaded Paimon jar by
 * tests/fixtures/java_paimon.py, which is also the only client.
 *
 * Request:  {"id": "...", "op": "read", "args": {...}}
 * Response: {"id": "...", "ok": true, "result": ...}
 *       or  {"id": "...", "ok": false, "error_type": "java.lang.X", "message": "...", "traceback": "..."}
 *
 * Values travel in a typed JSON encoding that loses nothing (the Python side decodes it with the
 * table's types): integers as numbers, FLOAT/DOUBLE as numbers or "NaN"/"Infinity"/"-Infinity",
 * DECIMAL as a plain string, BINARY/BYTES as base64, DATE as days, TIME as millis of the day,
 * TIMESTAMP (with or without local time zone) as [epochMillis, nanoOfMillisecond], ARRAY as a
 * list, MAP as a list of [key, value] pairs, ROW as a list of its fields.
 */

import org.apache.paimon.Snapshot;
import org.apache.paimon.catalog.Catalog;
import org.apache.paimon.catalog.CatalogContext;
import org.apache.paimon.catalog.CatalogFactory;
import org.apache.paimon.catalog.Identifier;
import org.apache.paimon.data.BinaryRow;
import org.apache.paimon.data.BinaryString;
import org.apache.paimon.data.Decimal;
import org.apache.paimon.data.GenericArray;
import org.apache.paimon.data.GenericMap;
import org.apache.paimon.data.GenericRow;
import org.apache.paimon.data.InternalArray;
import org.apache.paimon.data.InternalMap;
import org.apache.paimon.data.InternalRow;
import org.apache.paimon.data.Timestamp;
import org.apache.paimon.disk.IOManager;
import org.apache.paimon.fs.Path;
import org.apache.paimon.fs.local.LocalFileIO;
import org.apache.paimon.index.HashBucketAssigner;
import org.apache.paimon.io.DataFileMeta;
import org.apache.paimon.manifest.ManifestEntry;
import org.apache.paimon.operation.FileStoreScan;
import org.apache.paimon.options.ExpireConfig;
import org.apache.paimon.predicate.Predicate;
import org.apache.paimon.predicate.PredicateBuilder;
import org.apache.paimon.reader.RecordReader;
import org.apache.paimon.schema.Schema;
import org.apache.paimon.schema.SchemaChange;
import org.apache.paimon.shade.jackson2.com.fasterxml.jackson.core.JsonGenerator;
import org.apache.paimon.shade.jackson2.com.fasterxml.jackson.databind.JsonNode;
import org.apache.paimon.shade.jackson2.com.fasterxml.jackson.databind.ObjectMapper;
import org.apache.paimon.shade.jackson2.com.fasterxml.jackson.databind.node.ArrayNode;
import org.apache.paimon.shade.jackson2.com.fasterxml.jackson.databind.node.JsonNodeFactory;
import org.apache.paimon.shade.jackson2.com.fasterxml.jackson.databind.node.ObjectNode;
import org.apache.paimon.table.BucketMode;
import org.apache.paimon.table.FileStoreTable;
import org.apache.paimon.table.FileStoreTableFactory;
import org.apache.paimon.table.sink.BatchTableCommit;
import org.apache.paimon.table.sink.BatchTableWrite;
import org.apache.paimon.table.sink.BatchWriteBuilder;
import org.apache.paimon.table.sink.CommitMessage;
import org.apache.paimon.table.sink.RowPartitionKeyExtractor;
import org.apache.paimon.table.source.DataSplit;
import org.apache.paimon.table.source.InnerTableRead;
import org.apache.paimon.table.source.ReadBuilder;
import org.apache.paimon.table.source.Split;
import org.apache.paimon.table.source.TableRead;
import org.apache.paimon.types.ArrayType;
import org.apache.paimon.types.DataField;
import org.apache.paimon.types.DataType;
import org.apache.paimon.types.DataTypeJsonParser;
import org.apache.paimon.types.DecimalType;
import org.apache.paimon.types.MapType;
import org.apache.paimon.types.RowKind;
import org.apache.paimon.types.RowType;

import java.io.BufferedReader;
import java.io.FileDescriptor;
import java.io.FileOutputStream;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.math.BigDecimal;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Base64;
import java.util.HashMap;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;

public final class PaimonDriver {

    private static final ObjectMapper MAPPER = new ObjectMapper();
    private static final JsonNodeFactory NODES = JsonNodeFactory.instance;
    /** One spill/lookup directory for the JVM, under the working directory, removed at exit. */
    private static IOManager ioManager;

    public static void main(String[] args) throws Exception {
        // Paimon and Hadoop log to stdout; the protocol owns the real stdout.
        PrintStream out = new PrintStream(new FileOutputStream(FileDescriptor.out), true, "UTF-8");
        System.setOut(System.err);
        java.io.File ioDir = new java.io.File("paimon-io").getAbsoluteFile();
        ioDir.mkdirs();
        ioManager = IOManager.create(ioDir.getPath());
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        ObjectNode hello = NODES.objectNode();
        hello.put("ok", true);
        ObjectNode versions = hello.putObject("result");
        versions.put("java", System.getProperty("java.version"));
        versions.put("paimon", paimonVersion());
        out.println(MAPPER.writeValueAsString(hello));
        String line;
        while ((line = in.readLine()) != null) {
            if (line.isEmpty()) {
                continue;
            }
            JsonNode request = MAPPER.readTree(line);
            String op = request.path("op").asText();
            if (op.equals("exit")) {
                break;
            }
            ObjectNode response = NODES.objectNode();
            response.set("id", request.get("id"));
            try {
                response.set("result", dispatch(op, request.path("args")));
                response.put("ok", true);
            } catch (Throwable t) {
                response.put("ok", false);
                Throwable root = t;
                while (root.getCause() != null && root.getCause() != root) {
                    root = root.getCause();
                }
                response.put("error_type", t.getClass().getName());
                response.put("message", t + (root != t ? " (caused by " + root + ")" : ""));
                StringWriter trace = new StringWriter();
                t.printStackTrace(new PrintWriter(trace));
                response.put("traceback", trace.toString());
            }
            out.println(MAPPER.writeValueAsString(response));
        }
        ioManager.close();
    }

    private static String paimonVersion() {
        Package p = FileStoreTable.class.getPackage();
        String v = p == null ? null : p.getImplementationVersion();
        return v == null ? "unknown" : v;
    }

    private static JsonNode dispatch(String op, JsonNode args) throws Exception {
        switch (op) {
            case "ping":
                return NODES.textNode("pong");
            case "create_table":
                return createTable(args);
            case "write":
                return write(args);
            case "read":
                return read(args);
            case "compact":
                return compact(args);
            case "expire_snapshots":
                return expireSnapshots(args);
            case "expire_changelogs":
                return expireChangelogs(args);
            case "stream_read":
                return streamRead(args);
            case "consumer":
                return consumer(args);
            case "create_tag":
                return createTag(args);
            case "files":
                return files(args);
            case "snapshots":
                return snapshots(args);
            case "schema":
                return fieldsJson(table(args).rowType().getFields());
            case "alter_table":
                return alterTable(args);
            case "system_table":
                return systemTable(args);
            default:
                throw new IllegalArgumentException("unknown op " + op);
        }
    }

    // ---------------------------------------------------------------------------------------------
    // Tables

    private static FileStoreTable table(JsonNode args) {
        FileStoreTable table = FileStoreTableFactory.create(LocalFileIO.create(), new Path(args.get("path").asText()));
        JsonNode options = args.path("options");
        if (options.isObject() && options.size() > 0) {
            Map<String, String> dynamic = new HashMap<>();
            options.fields().forEachRemaining(e -> dynamic.put(e.getKey(), e.getValue().asText()));
            table = table.copy(dynamic);
        }
        return table;
    }

    private static JsonNode createTable(JsonNode args) throws Exception {
        Schema.Builder builder = Schema.newBuilder();
        for (JsonNode field : args.get("fields")) {
            builder.column(field.get("name").asText(), DataTypeJsonParser.parseDataType(field.get("type")));
        }
        builder.primaryKey(strings(args.path("primary_keys")));
        builder.partitionKeys(strings(args.path("partition_keys")));
        args.path("options").fields().forEachRemaining(e -> builder.option(e.getKey(), e.getValue().asText()));
        String[] parts = args.get("identifier").asText().split("\\.");
        try (Catalog catalog = CatalogFactory.createCatalog(CatalogContext.create(new Path(args.get("warehouse").asText())))) {
            catalog.createDatabase(parts[0], true);
            Identifier identifier = Identifier.create(parts[0], parts[1]);
            catalog.createTable(identifier, builder.build(), false);
            return NODES.textNode(catalog.getTableLocation(identifier).toString());
        }
    }

    /** ALTER TABLE through Java's catalog: add/rename/drop a column, change its type, set an option. */
    private static JsonNode alterTable(JsonNode args) throws Exception {
        List<SchemaChange> changes = new ArrayList<>();
        for (JsonNode c : args.get("changes")) {
            String name = c.path("name").asText();
            switch (c.get("op").asText()) {
                case "add_column":
                    changes.add(SchemaChange.addColumn(name, DataTypeJsonParser.parseDataType(c.get("type"))));
                    break;
                case "rename_column":
                    changes.add(SchemaChange.renameColumn(name, c.get("new_name").asText()));
                    break;
                case "drop_column":
                    changes.add(SchemaChange.dropColumn(name));
                    break;
                case "update_column_type":
                    changes.add(SchemaChange.updateColumnType(name, DataTypeJsonParser.parseDataType(c.get("type"))));
                    break;
                case "set_option":
                    changes.add(SchemaChange.setOption(c.get("key").asText(), c.get("value").asText()));
                    break;
                default:
                    throw new IllegalArgumentException("unknown schema change " + c);
            }
        }
        String[] parts = args.get("identifier").asText().split("\\.");
        try (Catalog catalog = CatalogFactory.createCatalog(CatalogContext.create(new Path(args.get("warehouse").asText())))) {
            catalog.alterTable(Identifier.create(parts[0], parts[1]), changes, false);
        }
        return NODES.nullNode();
    }

    private static List<String> strings(JsonNode array) {
        List<String> out = new ArrayList<>();
        for (JsonNode n : array) {
            out.add(n.asText());
        }
        return out;
    }

    // ---------------------------------------------------------------------------------------------
    // Write, compact, expire

    private static JsonNode write(JsonNode args) throws Exception {
        FileStoreTable table = table(args);
        RowType rowType = table.rowType();
        BatchWriteBuilder builder = table.newBatchWriteBuilder();
        JsonNode overwrite = args.path("overwrite");
        if (overwrite.isObject()) {
            Map<String, String> partition = new LinkedHashMap<>();
            overwrite.fields().forEachRemaining(e -> partition.put(e.getKey(), e.getValue().asText()));
            builder = builder.withOverwrite(partition);
        } else if (overwrite.asBoolean(false)) {
            builder = builder.withOverwrite();
        }
        JsonNode kinds = args.path("kinds");
        if (table.bucketMode() == BucketMode.CROSS_PARTITION) {
            // Flink's sink keeps the key -> (partition, bucket) index in RocksDB (GlobalIndexAssigner).
            try {
                Class.forName("org.rocksdb.RocksDB");
            } catch (ClassNotFoundException e) {
                throw new UnsupportedOperationException(
                        "cross-partition upsert needs RocksDB (org.rocksdb.RocksDB) for its global index; this jar lacks it");
            }
            throw new UnsupportedOperationException("the driver does not run GlobalIndexAssigner");
        }
        HashBucketAssigner assigner = null;
        RowPartitionKeyExtractor extractor = null;
        if (table.bucketMode() == BucketMode.HASH_DYNAMIC) {
            // What Flink's dynamic-bucket sink does: a hash-index assigner before the writer.
            extractor = new RowPartitionKeyExtractor(table.schema());
            assigner = new HashBucketAssigner(table.snapshotManager(), "java-driver", table.store().newIndexFileHandler(),
                    1, 1, 0, table.coreOptions().dynamicBucketTargetRowNum());
        }
        try (BatchTableWrite write = newWrite(builder); BatchTableCommit commit = builder.newCommit()) {
            int i = 0;
            for (JsonNode row : args.get("rows")) {
                RowKind kind = kinds.isArray() ? RowKind.fromShortString(kinds.get(i).asText()) : RowKind.INSERT;
                GenericRow internal = toRow(row, rowType);
                internal.setRowKind(kind);
                if (assigner != null) {
                    int bucket = assigner.assign(extractor.partition(internal), extractor.trimmedPrimaryKey(internal).hashCode());
                    write.write(internal, bucket);
                } else {
                    write.write(internal);
                }
                i++;
            }
            commit.commit(write.prepareCommit());
        }
        Snapshot latest = table.snapshotManager().latestSnapshot();
        return latest == null ? NODES.nullNode() : NODES.numberNode(latest.id());
    }

    /** A batch write with a spill/lookup directory (lookup compaction and deletion vectors need one). */
    private static BatchTableWrite newWrite(BatchWriteBuilder builder) {
        BatchTableWrite write = builder.newWrite();
        write.withIOManager(ioManager);
        return write;
    }

    private static JsonNode compact(JsonNode args) throws Exception {
        FileStoreTable table = table(args);
        boolean full = args.path("full").asBoolean(true);
        Set<String> seen = new LinkedHashSet<>();
        BatchWriteBuilder builder = table.newBatchWriteBuilder();
        JsonNode onlyBucket = args.path("bucket");
        JsonNode onlyPartition = args.path("partition");
        RowType partitionType = table.schema().logicalPartitionType();
        try (BatchTableWrite write = newWrite(builder); BatchTableCommit commit = builder.newCommit()) {
            for (Split split : table.newSnapshotReader().read().splits()) {
                DataSplit ds = (DataSplit) split;
                if (onlyBucket.isInt() && ds.bucket() != onlyBucket.asInt()) {
                    continue;
                }
                if (onlyPartition.isArray() && !onlyPartition.equals(rowJson(ds.partition(), partitionType))) {
                    continue;
                }
                String key = ds.partition().toString() + "/" + ds.bucket();
                if (seen.add(key)) {
                    write.compact(ds.partition(), ds.bucket(), full);
                }
            }
            List<CommitMessage> messages = write.prepareCommit();
            commit.commit(messages);
        }
        Snapshot latest = table.snapshotManager().latestSnapshot();
        return latest == null ? NODES.nullNode() : NODES.numberNode(latest.id());
    }

    private static JsonNode expireSnapshots(JsonNode args) {
        FileStoreTable table = table(args);
        return NODES.numberNode(table.newExpireSnapshots().config(expireConfig(args)).expire());
    }

    /** Snapshot values from the arguments; changelog values (decoupled lifecycle) when given. */
    private static ExpireConfig expireConfig(JsonNode args) {
        ExpireConfig.Builder config = ExpireConfig.builder()
                .snapshotRetainMin(args.path("retain_min").asInt(1))
                .snapshotRetainMax(args.path("retain_max").asInt(Integer.MAX_VALUE))
                .snapshotTimeRetain(Duration.ofMillis(args.path("time_retained_ms").asLong(0)))
                .snapshotMaxDeletes(args.path("max_deletes").asInt(Integer.MAX_VALUE));
        if (args.has("changelog_retain_min")) {
            config.changelogRetainMin(args.get("changelog_retain_min").asInt());
        }
        if (args.has("changelog_retain_max")) {
            config.changelogRetainMax(args.get("changelog_retain_max").asInt());
        }
        if (args.has("changelog_time_retained_ms")) {
            config.changelogTimeRetain(Duration.ofMillis(args.get("changelog_time_retained_ms").asLong()));
        }
        if (args.has("changelog_max_deletes")) {
            config.changelogMaxDeletes(args.get("changelog_max_deletes").asInt());
        }
        return config.build();
    }

    private static JsonNode expireChangelogs(JsonNode args) {
        FileStoreTable table = table(args);
        return NODES.numberNode(table.newExpireChangelog().config(expireConfig(args)).expire());
    }

    /** Table.createTag(name, snapshotId[, timeRetained]): "time_retained_ms" sets the tag's TTL. */
    private static JsonNode createTag(JsonNode args) {
        FileStoreTable table = table(args);
        String name = args.get("name").asText();
        long snapshotId = args.get("snapshot_id").asLong();
        if (args.has("time_retained_ms")) {
            table.createTag(name, snapshotId, Duration.ofMillis(args.get("time_retained_ms").asLong()));
        } else {
            table.createTag(name, snapshotId);
        }
        return NODES.nullNode();
    }

    /** Java's consumer file: set "next_snapshot" when given, then return it (null: no consumer). */
    private static JsonNode consumer(JsonNode args) {
        org.apache.paimon.consumer.ConsumerManager manager = new org.apache.paimon.consumer.ConsumerManager(
                LocalFileIO.create(), new Path(args.get("path").asText()));
        String id = args.get("id").asText();
        if (args.has("next_snapshot")) {
            manager.resetConsumer(id, new org.apache.paimon.consumer.Consumer(args.get("next_snapshot").asLong()));
        }
        return manager.consumer(id).map(c -> (JsonNode) NODES.numberNode(c.nextSnapshot())).orElse(NODES.nullNode());
    }

    /**
     * A streaming read from snapshot "from" (scan.mode = from-snapshot, which time-travels to that
     * snapshot's schema) or, with "consumer_id", from where that consumer's file says (no time
     * travel: the table's schema), until the latest snapshot: every changelog Java's stream scan
     * plans, in order (long-lived changelogs included).
     */
    private static JsonNode streamRead(JsonNode args) throws Exception {
        FileStoreTable table = table(args);
        Map<String, String> dynamic = new HashMap<>();
        if (args.has("consumer_id")) {
            dynamic.put("consumer-id", args.get("consumer_id").asText());
        } else {
            dynamic.put("scan.mode", "from-snapshot");
            dynamic.put("scan.snapshot-id", args.get("from").asText());
        }
        table = table.copy(dynamic);
        long latest = table.snapshotManager().latestSnapshotId();
        RowType rowType = table.rowType();
        ReadBuilder builder = table.newReadBuilder();
        org.apache.paimon.table.source.StreamTableScan scan = builder.newStreamScan();
        TableRead tableRead = builder.newRead();
        ObjectNode result = NODES.objectNode();
        result.set("fields", fieldsJson(rowType.getFields()));
        ArrayNode rows = result.putArray("rows");
        ArrayNode kinds = result.putArray("kinds");
        for (int i = 0; i < 100000; i++) {
            List<Split> splits = scan.plan().splits();
            try (RecordReader<InternalRow> reader = tableRead.createReader(splits)) {
                reader.forEachRemaining(row -> {
                    rows.add(rowJson(row, rowType));
                    kinds.add(row.getRowKind().shortString());
                });
            }
            Long next = scan.checkpoint();
            if (next != null && next > latest) {
                break;
            }
        }
        return result;
    }

    // ---------------------------------------------------------------------------------------------
    // Read

    private static JsonNode read(JsonNode args) throws Exception {
        FileStoreTable fileTable = table(args);
        // "system": "ro" reads the read-optimized system table (what catalog.getTable("db.t$ro") returns)
        org.apache.paimon.table.Table table = "ro".equals(args.path("system").asText(""))
                ? new org.apache.paimon.table.system.ReadOptimizedTable(fileTable) : fileTable;
        RowType rowType = table.rowType();
        ReadBuilder builder = table.newReadBuilder();
        JsonNode filter = args.path("filter");
        if (filter.isObject()) {
            builder = builder.withFilter(predicate(filter, rowType, new PredicateBuilder(rowType)));
        }
        JsonNode projection = args.path("projection");
        if (projection.isArray()) {
            int[] indexes = new int[projection.size()];
            for (int i = 0; i < indexes.length; i++) {
                indexes[i] = rowType.getFieldIndex(projection.get(i).asText());
            }
            builder = builder.withProjection(indexes);
            rowType = rowType.project(indexes);
        }
        TableRead tableRead = builder.newRead();
        if (args.path("keep_delete").asBoolean(false)) {
            // A batch read drops -U/-D rows; a changelog read must keep them (as audit_log does).
            tableRead = ((InnerTableRead) tableRead).forceKeepDelete();
        }
        if (filter.isObject()) {
            tableRead = tableRead.executeFilter();
        }
        ObjectNode result = NODES.objectNode();
        result.set("fields", fieldsJson(rowType.getFields()));
        ArrayNode rows = result.putArray("rows");
        ArrayNode kinds = result.putArray("kinds");
        List<Split> splits = builder.newScan().plan().splits();
        final RowType type = rowType;
        try (RecordReader<InternalRow> reader = tableRead.createReader(splits)) {
            reader.forEachRemaining(row -> {
                rows.add(rowJson(row, type));
                kinds.add(row.getRowKind().shortString());
            });
        }
        return result;
    }

    /**
     * A system table ("db.t$snapshots", ...) through Java's catalog ({@code Catalog.getTable}): its
     * fields and every row of its plan, in Java's order.
     */
    private static JsonNode systemTable(JsonNode args) throws Exception {
        try (Catalog catalog = CatalogFactory.createCatalog(CatalogContext.create(new Path(args.get("warehouse").asText())))) {
            org.apache.paimon.table.Table table = catalog.getTable(Identifier.fromString(args.get("identifier").asText()));
            RowType rowType = table.rowType();
            ReadBuilder builder = table.newReadBuilder();
            ObjectNode result = NODES.objectNode();
            result.set("fields", fieldsJson(rowType.getFields()));
            ArrayNode rows = result.putArray("rows");
            try (RecordReader<InternalRow> reader = builder.newRead().createReader(builder.newScan().plan().splits())) {
                reader.forEachRemaining(row -> rows.add(rowJson(row, rowType)));
            }
            return result;
        }
    }

    private static Predicate predicate(JsonNode p, RowType rowType, PredicateBuilder b) {
        String method = p.get("method").asText();
        if (method.equals("and") || method.equals("or")) {
            List<Predicate> children = new ArrayList<>();
            for (JsonNode c : p.get("children")) {
                children.add(predicate(c, rowType, b));
            }
            return method.equals("and") ? PredicateBuilder.and(children) : PredicateBuilder.or(children);
        }
        int index = rowType.getFieldIndex(p.get("field").asText());
        DataType type = rowType.getTypeAt(index);
        List<Object> literals = new ArrayList<>();
        for (JsonNode lit : p.path("literals")) {
            literals.add(toInternal(lit, type));
        }
        switch (method) {
            case "equal": return b.equal(index, literals.get(0));
            case "not_equal": return b.notEqual(index, literals.get(0));
            case "less_than": return b.lessThan(index, literals.get(0));
            case "less_or_equal": return b.lessOrEqual(index, literals.get(0));
            case "greater_than": return b.greaterThan(index, literals.get(0));
            case "greater_or_equal": return b.greaterOrEqual(index, literals.get(0));
            case "is_null": return b.isNull(index);
            case "is_not_null": return b.isNotNull(index);
            case "is_in": return b.in(index, literals);
            case "is_not_in": return b.notIn(index, literals);
            case "between": return b.between(index, literals.get(0), literals.get(1));
            case "startswith": return b.startsWith(index, literals.get(0));
            default: throw new IllegalArgumentException("unknown predicate method " + method);
        }
    }

    // ---------------------------------------------------------------------------------------------
    // Metadata

    private static JsonNode files(JsonNode args) throws Exception {
        FileStoreTable table = table(args);
        FileStoreScan scan = table.store().newScan();
        if (args.path("snapshot_id").isNumber()) {
            scan = scan.withSnapshot(args.get("snapshot_id").asLong());
        }
        RowType partitionType = table.schema().logicalPartitionType();
        ObjectNode result = NODES.objectNode();
        result.set("partition_fields", fieldsJson(partitionType.getFields()));
        ArrayNode out = result.putArray("files");
        for (ManifestEntry entry : scan.plan().files()) {
            DataFileMeta f = entry.file();
            ObjectNode o = out.addObject();
            o.set("partition", rowJson(entry.partition(), partitionType));
            o.put("bucket", entry.bucket());
            o.put("file_name", f.fileName());
            o.put("level", f.level());
            o.put("row_count", f.rowCount());
            o.put("min_sequence_number", f.minSequenceNumber());
            o.put("max_sequence_number", f.maxSequenceNumber());
            o.put("schema_id", f.schemaId());
            o.put("file_size", f.fileSize());
            o.put("file_format", f.fileFormat());
            o.put("delete_row_count", f.deleteRowCount().orElse(null));
        }
        return result;
    }

    private static JsonNode snapshots(JsonNode args) throws Exception {
        FileStoreTable table = table(args);
        ArrayNode out = NODES.arrayNode();
        Iterator<Snapshot> it = table.snapshotManager().snapshots();
        while (it.hasNext()) {
            Snapshot s = it.next();
            ObjectNode o = out.addObject();
            o.put("id", s.id());
            o.put("schema_id", s.schemaId());
            o.put("commit_kind", s.commitKind().name());
            o.put("commit_user", s.commitUser());
            o.put("total_record_count", s.totalRecordCount());
            o.put("delta_record_count", s.deltaRecordCount());
            o.put("changelog_record_count", s.changelogRecordCount());
            o.put("time_millis", s.timeMillis());
        }
        return out;
    }

    private static JsonNode fieldsJson(List<DataField> fields) throws Exception {
        StringWriter json = new StringWriter();
        try (JsonGenerator gen = MAPPER.getFactory().createGenerator(json)) {
            gen.writeStartArray();
            for (DataField f : fields) {
                f.serializeJson(gen);
            }
            gen.writeEndArray();
        }
        return MAPPER.readTree(json.toString());
    }

    // ---------------------------------------------------------------------------------------------
    // Values: typed JSON <-> Paimon internal data

    private static GenericRow toRow(JsonNode values, RowType rowType) {
        GenericRow row = new GenericRow(rowType.getFieldCount());
        for (int i = 0; i < rowType.getFieldCount(); i++) {
            row.setField(i, toInternal(values.get(i), rowType.getTypeAt(i)));
        }
        return row;
    }

    private static Object toInternal(JsonNode v, DataType type) {
        if (v == null || v.isNull()) {
            return null;
        }
        switch (type.getTypeRoot()) {
            case BOOLEAN: return v.asBoolean();
            case TINYINT: return (byte) v.asInt();
            case SMALLINT: return (short) v.asInt();
            case INTEGER: case DATE: case TIME_WITHOUT_TIME_ZONE: return v.asInt();
            case BIGINT: return v.asLong();
            case FLOAT: return v.isTextual() ? Float.parseFloat(v.asText()) : (float) v.asDouble();
            case DOUBLE: return v.isTextual() ? Double.parseDouble(v.asText()) : v.asDouble();
            case DECIMAL: {
                DecimalType d = (DecimalType) type;
                return Decimal.fromBigDecimal(new BigDecimal(v.asText()), d.getPrecision(), d.getScale());
            }
            case CHAR: case VARCHAR: return BinaryString.fromString(v.asText());
            case BINARY: case VARBINARY: return Base64.getDecoder().decode(v.asText());
            case TIMESTAMP_WITHOUT_TIME_ZONE: case TIMESTAMP_WITH_LOCAL_TIME_ZONE:
                return Timestamp.fromEpochMillis(v.get(0).asLong(), v.get(1).asInt());
            case ARRAY: {
                DataType element = ((ArrayType) type).getElementType();
                Object[] items = new Object[v.size()];
                for (int i = 0; i < items.length; i++) {
                    items[i] = toInternal(v.get(i), element);
                }
                return new GenericArray(items);
            }
            case MAP: case MULTISET: {
                DataType keyType = type instanceof MapType ? ((MapType) type).getKeyType()
                        : ((org.apache.paimon.types.MultisetType) type).getElementType();
                DataType valueType = type instanceof MapType ? ((MapType) type).getValueType()
                        : new org.apache.paimon.types.IntType(false);
                Map<Object, Object> map = new LinkedHashMap<>();
                for (JsonNode pair : v) {
                    map.put(toInternal(pair.get(0), keyType), toInternal(pair.get(1), valueType));
                }
                return new GenericMap(map);
            }
            case ROW: return toRow(v, (RowType) type);
            default: throw new IllegalArgumentException("driver cannot encode type " + type);
        }
    }

    private static ArrayNode rowJson(InternalRow row, RowType rowType) {
        ArrayNode out = NODES.arrayNode();
        for (int i = 0; i < rowType.getFieldCount(); i++) {
            Object value = InternalRow.createFieldGetter(rowType.getTypeAt(i), i).getFieldOrNull(row);
            out.add(toJson(value, rowType.getTypeAt(i)));
        }
        return out;
    }

    private static JsonNode toJson(Object v, DataType type) {
        if (v == null) {
            return NODES.nullNode();
        }
        switch (type.getTypeRoot()) {
            case BOOLEAN: return NODES.booleanNode((Boolean) v);
            case TINYINT: return NODES.numberNode((Byte) v);
            case SMALLINT: return NODES.numberNode((Short) v);
            case INTEGER: case DATE: case TIME_WITHOUT_TIME_ZONE: return NODES.numberNode((Integer) v);
            case BIGINT: return NODES.numberNode((Long) v);
            case FLOAT: {
                float f = (Float) v;
                return Float.isFinite(f) ? NODES.numberNode(f) : NODES.textNode(Float.toString(f));
            }
            case DOUBLE: {
                double d = (Double) v;
                return Double.isFinite(d) ? NODES.numberNode(d) : NODES.textNode(Double.toString(d));
            }
            case DECIMAL: return NODES.textNode(((Decimal) v).toBigDecimal().toPlainString());
            case CHAR: case VARCHAR: return NODES.textNode(v.toString());
            case BINARY: case VARBINARY: return NODES.textNode(Base64.getEncoder().encodeToString((byte[]) v));
            case TIMESTAMP_WITHOUT_TIME_ZONE: case TIMESTAMP_WITH_LOCAL_TIME_ZONE: {
                Timestamp ts = (Timestamp) v;
                ArrayNode pair = NODES.arrayNode();
                pair.add(ts.getMillisecond());
                pair.add(ts.getNanoOfMillisecond());
                return pair;
            }
            case ARRAY: {
                DataType element = ((ArrayType) type).getElementType();
                InternalArray array = (InternalArray) v;
                InternalArray.ElementGetter getter = InternalArray.createElementGetter(element);
                ArrayNode out = NODES.arrayNode();
                for (int i = 0; i < array.size(); i++) {
                    out.add(toJson(getter.getElementOrNull(array, i), element));
                }
                return out;
            }
            case MAP: {
                MapType mapType = (MapType) type;
                InternalMap map = (InternalMap) v;
                InternalArray keys = map.keyArray();
                InternalArray values = map.valueArray();
                InternalArray.ElementGetter kg = InternalArray.createElementGetter(mapType.getKeyType());
                InternalArray.ElementGetter vg = InternalArray.createElementGetter(mapType.getValueType());
                ArrayNode out = NODES.arrayNode();
                for (int i = 0; i < map.size(); i++) {
                    ArrayNode pair = out.addArray();
                    pair.add(toJson(kg.getElementOrNull(keys, i), mapType.getKeyType()));
                    pair.add(toJson(vg.getElementOrNull(values, i), mapType.getValueType()));
                }
                return out;
            }
            case ROW: return rowJson((InternalRow) v, (RowType) type);
            default: throw new IllegalArgumentException("driver cannot decode type " + type);
        }
    }

    private PaimonDriver() {
    }
}
