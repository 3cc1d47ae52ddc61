import LedgerService
import ServiceRuntime

await ServiceMain.run("ledger", LedgerService.make)
