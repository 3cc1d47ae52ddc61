import VerifierService
import ServiceRuntime

await ServiceMain.run("verifier", VerifierService.make)
