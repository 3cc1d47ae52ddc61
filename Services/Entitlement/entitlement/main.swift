import EntitlementService
import ServiceRuntime

await ServiceMain.run("entitlement", EntitlementService.make)
