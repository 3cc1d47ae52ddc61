import Model
import Wire

/// The tables in a checkpoint: the large ones as they sit in memory (records, index slots with
/// the hash seed they were made with, the text arena's chunks), the small ones field by field.
/// What the policy decides (capabilities, durations) is not kept: it is worked out again from the
/// products under the policy in force.
extension ViewTables {
    /// Sizes of the records as this build lays them out; a checkpoint of another layout is not
    /// read.
    static var recordLayout: [UInt64] {
        [
            UInt64(MemoryLayout<AccountRecord>.stride), UInt64(MemoryLayout<Holding>.stride),
            UInt64(MemoryLayout<PeriodRecord>.stride), UInt64(ViewMemory.blockBytes),
        ]
    }

    func write(to writer: inout CheckpointWriter) throws(CheckpointError) {
        for size in Self.recordLayout { writer.integer(size) }
        writer.integer(hash.seed)
        writer.integer(position ?? 0)
        writer.integer(positionCommitted ?? -1)
        writer.integer(UInt64(held))
        writer.integer(UInt64(accountsHolding))
        writer.integer(UInt64(lastRenewalProfile))
        try accounts.write(to: &writer)
        try accountIndex.write(to: &writer)
        try holdings.write(to: &writer)
        try holdingIndex.write(to: &writer)
        try periodRecords.write(to: &writer)
        try texts.write(to: &writer)
        try productSlots.write(to: &writer)
        writer.integer(UInt64(products.count))
        for (product, names) in zip(products, productNames) {
            writer.integer(Int64(product.store.rawValue))
            writer.string(product.productID)
            writer.optionalString(product.basePlanID)
            writer.integer(names.productID)
            writer.integer(names.basePlanID ?? UInt64.max)
        }
        writer.integer(UInt64(nonRenewingProducts.count))
        for product in nonRenewingProducts.sorted() { writer.integer(UInt64(product)) }
        writer.integer(UInt64(renewalProfiles.count))
        for profile in renewalProfiles {
            writer.bytes(profile.renewal.serialized())
            writer.integer(UInt64(profile.dueAtEnd ? 1 : 0))
            writer.integer(UInt64(profile.offProducts.count))
            for product in profile.offProducts { writer.string(product) }
            writer.optionalString(profile.bundleOrPackage)
        }
    }

    /// Tables read from a checkpoint, each reference in them checked to land inside its table.
    static func read(from reader: inout CheckpointReader) throws(CheckpointError) -> ViewTables {
        for size in recordLayout {
            let stored = try reader.integer()
            guard stored == size else {
                throw CheckpointError("written by a build with other record sizes (\(stored), not \(size))")
            }
        }
        let tables = ViewTables()
        tables.hash = ViewHash(seed: try reader.integer())
        tables.position = try reader.integer()
        let committed = try reader.signed()
        tables.positionCommitted = committed < 0 ? nil : committed
        tables.held = try reader.count(limit: Int(UInt32.max))
        tables.accountsHolding = try reader.count(limit: Int(UInt32.max))
        tables.lastRenewalProfile = UInt32(try reader.count(limit: Int(UInt32.max)))
        tables.accounts = try ChunkedArray(reading: &reader)
        tables.accountIndex = try SlotTable(reading: &reader)
        tables.holdings = try ChunkedArray(reading: &reader)
        tables.holdingIndex = try SlotTable(reading: &reader)
        tables.periodRecords = try ChunkedArray(reading: &reader)
        tables.texts = try TextArena(reading: &reader)
        tables.productSlots = try SlotTable(reading: &reader)
        let productCount = try reader.count(limit: Int(UInt32.max))
        for _ in 0..<productCount {
            let store = try reader.signed()
            guard let known = Store(rawValue: Int32(truncatingIfNeeded: store)) else {
                throw CheckpointError("a product of store \(store)")
            }
            tables.products.append(
                ViewTables.Product(
                    store: known, productID: try reader.string(), basePlanID: try reader.optionalString()))
            let productID = try reader.integer()
            let plan = try reader.integer()
            tables.productNames.append((productID, plan == UInt64.max ? nil : plan))
        }
        for _ in 0..<(try reader.count(limit: productCount)) {
            tables.nonRenewingProducts.insert(UInt32(try reader.count(limit: max(productCount - 1, 0))))
        }
        let profileCount = try reader.count(limit: Int(UInt32.max))
        for index in 0..<profileCount {
            let renewal: GrantRenewal
            do { renewal = try GrantRenewal(serialized: try reader.bytes()) } catch let error as CheckpointError {
                throw error
            } catch {
                throw CheckpointError("renewal details that do not read: \(error)")
            }
            let dueAtEnd = try reader.count(limit: 1) == 1
            var offProducts: [String] = []
            for _ in 0..<(try reader.count(limit: 1 << 16)) { offProducts.append(try reader.string()) }
            let profile = RenewalProfile(
                renewal: renewal, dueAtEnd: dueAtEnd, offProducts: offProducts,
                bundleOrPackage: try reader.optionalString())
            tables.renewalProfiles.append(profile)
            tables.renewalProfileIndex[profile] = UInt32(index)
        }
        try reader.finish()
        try tables.checkReferences()
        // Not in the file: counted once from the holdings.
        tables.recountHeld()
        return tables
    }

    /// Throws unless every record's references land inside their tables, so that a checkpoint
    /// whose checksum matches by chance cannot send a read out of bounds.
    private func checkReferences() throws(CheckpointError) {
        let accountCount = UInt32(accounts.count)
        let holdingCount = UInt32(holdings.count)
        let periodCount = UInt32(periodRecords.count)
        let productCount = UInt32(products.count)
        let profileCount = UInt32(renewalProfiles.count)
        for index in 0..<accounts.count {
            let record = accounts[index]
            guard record.first <= holdingCount, !record.isText || texts.contains(record.high) else {
                throw CheckpointError("account \(index) refers outside the tables")
            }
        }
        for index in 0..<holdings.count {
            let holding = holdings[index]
            guard holding.product < productCount, holding.owner <= accountCount, holding.next <= holdingCount,
                holding.earlier <= periodCount, holding.renewal <= profileCount,
                !holding.hasTextID || texts.contains(holding.id)
            else { throw CheckpointError("subscription \(index) refers outside the tables") }
        }
        for index in 0..<periodRecords.count {
            let record = periodRecords[index]
            guard record.status != nil || record.productIndex < productCount, record.next <= periodCount else {
                throw CheckpointError("period \(index) refers outside the tables")
            }
        }
        for names in productNames {
            guard texts.contains(names.productID), names.basePlanID.map({ texts.contains($0) }) ?? true else {
                throw CheckpointError("a product name refers outside the text arena")
            }
        }
        guard accountIndex.entriesBelow(accounts.count), holdingIndex.entriesBelow(holdings.count),
            productSlots.entriesBelow(products.count), Int(lastRenewalProfile) <= renewalProfiles.count,
            nonRenewingProducts.allSatisfy({ $0 < productCount })
        else { throw CheckpointError("an index refers outside its table") }
    }
}
